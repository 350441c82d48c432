"""cairosvg's node tree, built for less CPU when a document has no stylesheet.

cairosvg's ``Node.__init__`` does the whole CSS cascade for every element: it wraps the element for cssselect2 (its
parent, index and siblings), asks the document's two stylesheet matchers for the rules that match it, and merges
them with the inherited attributes, the element's attributes and its ``style=`` declarations. A model's SVG almost
never has a ``<style>`` element, and then both matchers hold no rule and every match answers ``[]``: on
bench/render.py's corpus the tree was ~9 % of a render, most of it spent on that.

:func:`build_tree` builds the same tree without that machinery when the document has no stylesheet rules: each
node gets the very same dict (inherited attributes, then its own, then its ``style=`` declarations — normal, then
``!important`` —, ``currentColor`` and ``inherit`` resolved) and the same attributes cairosvg's drawing code reads
(``tag``, ``text``, ``children``, ``parent``, ``url``, ``style``, ``xml_tree``, …). Text elements (``text``,
``textPath``, ``a``), whose children cairosvg builds from the text, keep cairosvg's own code for their subtree;
``use`` targets are built by cairosvg as before. The cssselect2 wrapper of an element is made only if something
asks for it. A document with rules, or a cairosvg version this was not checked on, is built by cairosvg's ``Tree``.
tests/test_render_fast.py compares both trees node by node, and the pixels both give.
"""

from __future__ import annotations

import functools

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
_TEXT_ROOTS = ("text", "textPath", "a")


def has_rules(matcher) -> bool:
    """Whether a cssselect2 matcher holds any selector (one without never matches anything)."""
    return any(
        (
            matcher.id_selectors,
            matcher.class_selectors,
            matcher.lower_local_name_selectors,
            matcher.namespace_selectors,
            matcher.lang_attr_selectors,
            matcher.other_selectors,
        )
    )


def node_tag(etree_tag: str) -> str:
    """cairosvg's ``Node.tag`` for an ElementTree tag: the local name in the SVG (or no) namespace, else
    ``{namespace}name``."""
    position = etree_tag.rfind("}")
    if position == -1 or etree_tag[0] != "{":
        return etree_tag
    namespace, local = etree_tag[1:position], etree_tag[position + 1 :]
    return local if namespace in ("", SVG_NAMESPACE) else f"{{{namespace}}}{local}"


@functools.cache
def _classes():
    import cssselect2
    from cairosvg import css
    from cairosvg.features import match_features
    from cairosvg.parser import COLOR_ATTRIBUTES, NOT_INHERITED_ATTRIBUTES, Node, Tree

    parse_declarations = css.parse_declarations

    def cascade(node, etree_element, parent) -> None:
        """What ``Node.__init__`` adds to the inherited attributes when no stylesheet rule can match."""
        node.update(etree_element.attrib)
        declarations = etree_element.get("style")
        if declarations:
            normal, important = parse_declarations(declarations)
            for name, value in normal:
                node[name] = value.strip()
            for name, value in important:
                node[name] = value.strip()
        for attribute in COLOR_ATTRIBUTES:
            if node.get(attribute) == "currentColor":
                node[attribute] = node.get("color", "black")
        if "inherit" in node.values():
            for attribute in [attribute for attribute in node if node[attribute] == "inherit"]:
                if parent is not None and attribute in parent:
                    node[attribute] = parent.get(attribute)
                else:
                    del node[attribute]

    def add_children(node, etree_element) -> None:
        """The node's children, as ``Node.__init__`` makes them (text through cairosvg's own code)."""
        if node.tag in _TEXT_ROOTS:
            node.children, _ = node.text_children(
                cssselect2.ElementWrapper.from_xml_root(etree_element), trailing_space=True, text_root=True
            )
        if not node.children:
            children = []
            for child in etree_element:
                if isinstance(child.tag, str) and match_features(child):
                    children.append(AttributeNode(child, node))
                    if node.tag == "switch":
                        break
            node.children = children

    class AttributeNode(Node):
        """cairosvg's ``Node`` for an element of a document without stylesheet rules."""

        def __init__(self, etree_element, parent) -> None:  # noqa: D107 - Node.__init__ is skipped on purpose
            dict.__init__(
                self, [(name, value) for name, value in parent.items() if name not in NOT_INHERITED_ATTRIBUTES]
            )
            self.children = ()
            self.root = False
            self.style = parent.style
            self.tag = node_tag(etree_element.tag)
            self.text = etree_element.text
            self.url_fetcher = parent.url_fetcher
            self.unsafe = parent.unsafe
            self.xml_tree = etree_element
            self.url = parent.url
            self.parent = parent
            cascade(self, etree_element, parent)
            add_children(self, etree_element)

        @functools.cached_property
        def element(self):
            return cssselect2.ElementWrapper.from_xml_root(self.xml_tree)

    class AttributeTree(Tree):
        """cairosvg's ``Tree`` (from bytes, no URL) for a document without stylesheet rules."""

        def __new__(cls, *args, **kwargs):  # Tree.__new__ looks tree_cache up: none here
            return dict.__new__(cls)

        def __init__(self, xml_root, style, url_fetcher) -> None:  # noqa: D107 - Tree.__init__ is skipped
            dict.__init__(self)
            self.url_fetcher = url_fetcher
            self.url = None
            self.xml_tree = xml_root
            self.children = ()
            self.root = False
            self.style = style
            self.tag = node_tag(xml_root.tag)
            self.text = xml_root.text
            self.unsafe = False
            self.parent = None
            cascade(self, xml_root, None)
            add_children(self, xml_root)
            self.root = True

        @functools.cached_property
        def element(self):
            return cssselect2.ElementWrapper.from_xml_root(self.xml_tree)

    return AttributeTree, Tree, css


def build_tree(data: bytes, url_fetcher):
    """The cairosvg tree of the SVG ``data`` (entities and external references refused, as ``Tree(...,
    unsafe=False)`` does): built by :class:`AttributeTree` when the document has no stylesheet rules, else by
    cairosvg. Raises what cairosvg's parser raises (defusedxml's errors, ``ParseError``)."""
    from defusedxml import ElementTree

    attribute_tree, tree_class, css = _classes()
    xml_root = ElementTree.fromstring(data, forbid_entities=True, forbid_external=True)
    probe = dict.__new__(tree_class)  # what parse_stylesheets reads of a tree: its XML and where it came from
    probe.xml_tree, probe.url, probe.url_fetcher = xml_root, None, url_fetcher
    parse_stylesheets = getattr(css.parse_stylesheets, "__wrapped__", css.parse_stylesheets)
    style = parse_stylesheets(probe, None)
    if has_rules(style[0]) or has_rules(style[1]):
        return tree_class(bytestring=data, url_fetcher=url_fetcher, unsafe=False)
    return attribute_tree(xml_root, style, url_fetcher)
