"""The run store's schema, as an ordered list of migrations: ``MIGRATIONS[i]`` upgrades a file from v``i`` to
v``i+1`` (the version lives in ``PRAGMA user_version``). Append new migrations; never edit a released one."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # v1
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        status TEXT NOT NULL,
        settings_json TEXT NOT NULL,
        dataset_json TEXT NOT NULL,
        summary_json TEXT
    );
    CREATE TABLE rollouts (
        rollout_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        row_index INTEGER NOT NULL,
        row_id TEXT NOT NULL,
        sample_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 1,
        is_current INTEGER NOT NULL DEFAULT 1,
        status TEXT NOT NULL,
        prompt TEXT NOT NULL,
        requirements_json TEXT NOT NULL,
        raw_answer TEXT,
        finish_reason TEXT,
        svg TEXT,
        png BLOB,
        judge_raw TEXT,
        rationale TEXT,
        verdicts_json TEXT,
        score REAL,
        fulfilled INTEGER,
        total INTEGER NOT NULL,
        is_score_valid INTEGER,
        reason TEXT,
        error TEXT,
        generation_s REAL,
        render_s REAL,
        judge_s REAL,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        judge_prompt_tokens INTEGER,
        judge_completion_tokens INTEGER,
        cached INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    CREATE INDEX rollouts_by_run ON rollouts(run_id, is_current, row_index, sample_index);
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        value_json TEXT NOT NULL,
        created TEXT NOT NULL
    );
    """,
    # v2: human overrides, kept next to the judge's verdict
    """
    ALTER TABLE rollouts ADD COLUMN override_score REAL;
    ALTER TABLE rollouts ADD COLUMN override_fulfilled INTEGER;
    ALTER TABLE rollouts ADD COLUMN override_verdicts_json TEXT;
    ALTER TABLE rollouts ADD COLUMN override_at TEXT;
    """,
    # v3: RFT jobs launched from here, so the app can list and poll them
    """
    CREATE TABLE rft_jobs (
        job_name TEXT PRIMARY KEY,
        display_name TEXT,
        base_url TEXT NOT NULL,
        account TEXT NOT NULL,
        dataset TEXT,
        evaluator TEXT,
        base_model TEXT,
        output_model TEXT,
        created TEXT NOT NULL,
        last_state TEXT,
        last_json TEXT,
        updated TEXT NOT NULL
    );
    CREATE INDEX rft_jobs_by_created ON rft_jobs(created);
    """,
    # v4: training runs seen by `svgagent serve` (one run per training step; see svgagent.core.serve.training_runs)
    """
    CREATE TABLE training_runs (
        training_id TEXT PRIMARY KEY,
        experiment_id TEXT NOT NULL,
        job_name TEXT,
        label TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    CREATE TABLE training_steps (
        training_id TEXT NOT NULL REFERENCES training_runs(training_id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        step_source TEXT NOT NULL,
        epoch INTEGER,
        ep_run_id TEXT,
        model TEXT,
        created TEXT NOT NULL,
        PRIMARY KEY (training_id, step)
    );
    CREATE TABLE training_rows (
        training_id TEXT NOT NULL REFERENCES training_runs(training_id) ON DELETE CASCADE,
        row_id TEXT NOT NULL,
        row_index INTEGER NOT NULL,
        PRIMARY KEY (training_id, row_id)
    );
    CREATE TABLE served_rollouts (
        ep_rollout_id TEXT PRIMARY KEY,
        rollout_id TEXT NOT NULL REFERENCES rollouts(rollout_id) ON DELETE CASCADE,
        training_id TEXT NOT NULL REFERENCES training_runs(training_id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        invocation_id TEXT NOT NULL,
        ep_run_id TEXT NOT NULL,
        row_id TEXT NOT NULL,
        model TEXT NOT NULL,
        status_code INTEGER,
        status_message TEXT,
        judged_locally INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    CREATE INDEX served_by_training ON served_rollouts(training_id, step, created);
    """,
    # v5: a run's lease (which process works on it; see core/store/leases.py), a rollout's typed failure kind, and which
    # of its text columns were cut to their size cap (column -> original length, see core/store/size_caps.py)
    """
    ALTER TABLE runs ADD COLUMN lease_owner TEXT;
    ALTER TABLE runs ADD COLUMN lease_heartbeat REAL;
    ALTER TABLE rollouts ADD COLUMN failure_kind TEXT;
    ALTER TABLE rollouts ADD COLUMN truncated_json TEXT;
    -- failures stored before kinds existed get theirs from the reason the engine wrote (once, here)
    UPDATE rollouts SET failure_kind = CASE
        WHEN is_score_valid = 1 AND reason LIKE 'render failed%' THEN 'render'
        WHEN is_score_valid = 1 THEN 'no_svg'
        WHEN error = 'judge gave no usable answer' THEN 'judge_unusable'
        WHEN reason LIKE '%request timed out%' THEN 'timeout'
        WHEN reason LIKE '%endpoint unreachable%' THEN 'unreachable'
        WHEN reason LIKE '%key rejected%' THEN 'auth'
        WHEN reason LIKE '%rate-limited%' THEN 'rate_limit'
        WHEN reason LIKE '%endpoint answered HTTP%' THEN 'http_error'
        WHEN reason LIKE 'internal error%' THEN 'internal'
        ELSE 'other' END
    WHERE status = 'failed';
    """,
    # v6: the seconds engines have worked on a run, summed over its sessions (start, resume, rerun); NULL: none yet
    """
    ALTER TABLE runs ADD COLUMN worked_s REAL;
    """,
    # v7: whose recipe a run's scores follow (core/scoring/judge_profiles.py) and what drew its pictures; runs stored
    # before these existed were judged by svgagent's own profile on cairosvg
    """
    ALTER TABLE runs ADD COLUMN judge_profile TEXT NOT NULL DEFAULT 'svgagent';
    ALTER TABLE runs ADD COLUMN renderer TEXT NOT NULL DEFAULT 'cairosvg';
    """,
    # v8: the rows an RFT launch kept out of training (`rft create --holdout`), to evaluate the trained model on
    """
    CREATE TABLE rft_holdouts (
        job_name TEXT PRIMARY KEY,
        fraction REAL NOT NULL,
        dataset_json TEXT NOT NULL,
        rows_json TEXT NOT NULL,
        created TEXT NOT NULL
    );
    """,
    # v9: the eval-protocol rollout id a served rollout came with (`svgagent serve`'s /init metadata), on the rollout
    # itself so the filter, `runs show` and the screens find it; served rollouts stored before get theirs (each attempt)
    """
    ALTER TABLE rollouts ADD COLUMN ep_rollout_id TEXT;
    UPDATE rollouts SET ep_rollout_id = (
        SELECT s.ep_rollout_id FROM served_rollouts s JOIN rollouts c ON c.rollout_id = s.rollout_id
        WHERE c.run_id = rollouts.run_id AND c.row_index = rollouts.row_index AND c.sample_index = rollouts.sample_index
    )
    WHERE run_id IN (SELECT r.run_id FROM training_steps r);
    """,
    # v10: the part of each call's prompt the provider served from its prompt cache (``prompt_tokens_details.
    # cached_tokens``), priced at the cached-input rate; NULL for calls stored before (priced as fresh input)
    """
    ALTER TABLE rollouts ADD COLUMN cached_prompt_tokens INTEGER;
    ALTER TABLE rollouts ADD COLUMN judge_cached_prompt_tokens INTEGER;
    """,
]
