"""svgagent.core.scoring: the evaluator kernel the RFT bundle copies as is (models, errors, endpoint, failures,
chat, extract, render, judge). Imports only itself, the standard library and its pinned dependencies."""
