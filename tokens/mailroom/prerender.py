"""An e-mail template rendered once per batch for what its e-mails share, and for each e-mail only where
they differ.

A template made of text, ``{% extends %}``, ``{% block %}``, ``{% load %}``, ``{% comment %}`` and
variables is, for a given context, its text and its variables' outputs one after the other, in the
order Django's extends and blocks put them. Its text and the variables that read only the batch's
shared values (the brand, the ask-again link) are written once, with the batch's first e-mail; each of the others is rendered for
each e-mail by its own compiled node, as Django renders it (filters, escaping, the active time zone and
language). A variable node that only formats a time (``date`` and ``time``, constant arguments) keeps
its output per value, time zone and language: a batch's tokens made together share their expiry. Any
other tag (``{% if %}`` on an e-mail's own values, ``{% for %}``, ``{% include %}``), or a translated
constant (``{{ _("...") }}``, translated in each e-mail's language), leaves the template to Django, rendered whole for each e-mail (tests/tokens/mailroom/test_prerender.py compares both).
"""

from django.template import Context
from django.template.backends.django import Template
from django.template.base import TextNode, Variable, VariableNode
from django.template.defaultfilters import date, time
from django.template.defaulttags import CommentNode, LoadNode
from django.template.loader_tags import BlockNode, ExtendsNode
from django.utils import timezone, translation
from django.utils.functional import Promise
from django.utils.safestring import SafeString

# Filters whose output depends on their value, their constant argument, the active time zone and
# language only, and which cost enough to keep: under cProfile a third of a template's rendering.
_TIME_FILTERS = {date, time}


class NotPrerendered(Exception):
    """The template holds something rendering it in pieces could change: Django renders it whole."""


class Prerendered:
    """``template`` for a batch whose e-mails all share ``shared`` and differ in the names ``own``."""

    def __init__(self, template: Template, *, shared: dict, own: set[str]):
        self.template = template.template  # Django's own, as the backend's wraps it
        if own & shared.keys():
            raise NotPrerendered(f"{sorted(own & shared.keys())} both shared and each e-mail's own")
        self._shared = shared
        self._shared_context = self._context(shared)
        self._own = own
        self._names = own | shared.keys()
        self._formatted: dict[tuple, str] = {}
        pieces: list[str | VariableNode] = []
        for piece in self._pieces(self.template.nodelist, blocks={}, history=[self.template.origin]):
            if isinstance(piece, str) and pieces and isinstance(pieces[-1], str):
                pieces[-1] += piece
            else:
                pieces.append(piece)
        self.pieces = pieces
        self._time_nodes = {piece for piece in pieces if not isinstance(piece, str) and _only_formats_time(piece)}
        self.formats_time = bool(self._time_nodes)

    def render(self, own: dict, *, locale: tuple | None = None) -> SafeString:
        """What Django's ``template.render({**shared, **own})`` writes. ``locale`` is ``active_locale()``,
        looked up once per e-mail by the caller when a template ``formats_time``; without it, no time's
        output is kept."""
        values = {**self._shared, **own}
        context = self._context(values)
        written = []
        for piece in self.pieces:
            if isinstance(piece, str):
                written.append(piece)
            elif locale is not None and piece in self._time_nodes:
                value = values[piece.filter_expression.var.var]
                key = (piece, type(value), value, locale)
                try:
                    output = self._formatted[key]
                except KeyError:
                    output = self._formatted[key] = piece.render_annotated(context)
                except TypeError:  # a value that cannot be a key: not kept
                    output = piece.render_annotated(context)
                written.append(output)
            else:
                written.append(piece.render_annotated(context))
        return SafeString("".join(written))

    def _context(self, values: dict) -> Context:
        # As the backend's Template.render() makes it; the template bound for string_if_invalid.
        context = Context(values, autoescape=self.template.engine.autoescape)
        context.template = self.template
        return context

    def _pieces(self, nodelist, *, blocks: dict[str, BlockNode], history: list):
        """The output of ``nodelist``: text, and the variable nodes to render for each e-mail."""
        for node in nodelist:
            if type(node) is TextNode:
                yield node.s
            elif type(node) is VariableNode:
                if self._reads_only_shared(node):
                    yield node.render_annotated(self._shared_context)
                else:
                    yield node
            elif type(node) is BlockNode:
                # The most derived block of that name, as BlockNode.render() takes it from the block context.
                yield from self._pieces(blocks.get(node.name, node).nodelist, blocks=blocks, history=history)
            elif type(node) is ExtendsNode:
                parent_name = node.parent_name
                if parent_name.is_var or parent_name.filters:
                    raise NotPrerendered(f"{{% extends {parent_name.token} %}} names its template by a variable")
                parent, origin = self.template.engine.find_template(parent_name.var, skip=history)
                parent_blocks = {block.name: block for block in parent.nodelist.get_nodes_by_type(BlockNode)}
                yield from self._pieces(
                    parent.nodelist, blocks={**parent_blocks, **node.blocks, **blocks}, history=[*history, origin]
                )
            elif type(node) in (CommentNode, LoadNode):
                continue
            else:
                raise NotPrerendered(f"{type(node).__name__} in {self.template.origin.name}")

    def _reads_only_shared(self, node: VariableNode) -> bool:
        """Whether the node's output is the batch's: every name it reads is shared. Raises NotPrerendered
        for a name neither shared nor each e-mail's own ({{ block.super }}, a misspelt name)."""
        expression = node.filter_expression
        constants = [] if expression.is_var else [expression.var]
        constants += [argument for _, arguments in expression.filters for lookup, argument in arguments if not lookup]
        if any(isinstance(constant, Promise) for constant in constants):
            # _("..."): translated as each e-mail is rendered, in its language, not once for the batch.
            raise NotPrerendered(f"{expression.token} translates a constant")
        variables = [expression.var] if expression.is_var else []
        variables += [argument for _, arguments in expression.filters for lookup, argument in arguments if lookup]
        # A number or quoted text ({{ 5 }}, truncatechars:30) is a Variable without lookups: it reads no name.
        names = {variable.lookups[0] for variable in variables if isinstance(variable, Variable) and variable.lookups}
        if names - self._names:
            raise NotPrerendered(f"{expression.token} reads {sorted(names - self._names)}")
        return not names & self._own


class Whole:
    """A template Prerendered refuses, rendered whole by Django for each e-mail."""

    formats_time = False

    def __init__(self, template: Template, *, shared: dict):
        self.template = template
        self._shared = shared

    def render(self, own: dict, *, locale: tuple | None = None) -> SafeString:
        return self.template.render({**self._shared, **own})


def prerendered(template: Template, *, shared: dict, own: set[str]) -> Prerendered | Whole:
    """``template`` rendered in pieces for a batch sharing ``shared``, or whole where it must be."""
    try:
        return Prerendered(template, shared=shared, own=own)
    except NotPrerendered:
        return Whole(template, shared=shared)


def _only_formats_time(node: VariableNode) -> bool:
    """``{{ name|date:"..." }}``: one name, time filters with constant arguments only."""
    expression = node.filter_expression
    return (
        expression.is_var
        and expression.var.lookups is not None
        and len(expression.var.lookups) == 1
        and bool(expression.filters)
        and all(
            function in _TIME_FILTERS and not any(lookup for lookup, _ in arguments)
            for function, arguments in expression.filters
        )
    )


def active_locale() -> tuple:
    """What a time's output depends on besides its value: the active time zone and language."""
    return (timezone.get_current_timezone(), translation.get_language())
