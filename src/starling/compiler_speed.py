"""Bookkeeping Numba's compiler repeats needlessly, done faster or not at all.

A cold start is Numba compiling about 190 kernels (``docs/performance.md``, "Start-up").
Timed across a cold ``lagoon`` (build and one step, one process), seven costs there were
Numba's own bookkeeping or its repeats of work already done, not typing or generating new
code:

* **Comparing compiler flags: 4.2 s of 88 s.** Numba looks up each typed overload of a
  function in a cache keyed by, among others, the compiler flags in force (a
  ``TargetConfig``), about 75,000 times. The flags' ``__eq__`` builds a dict of all 40-odd
  options, each read through a property, for both sides; their ``__hash__`` builds that
  dict too, sorts it, which sorts its *keys*, and hashes the option names, which are the
  same for every instance of a class. :func:`install` gives both a shortcut with the
  same results: the hash is computed once per class, and two flags of one class are
  compared only on the options either has set (an option set on neither has its default
  on both). Flags of two classes are compared as before.
* **Timing LLVM's lock: about 1.5 s.** Numba registers callbacks that fire an event
  every time llvmlite takes its lock, that is on every call into LLVM (143,000 in that
  cold start), to report how long each compilation held the lock in its metadata
  (``timers["llvm_lock"]``). Nothing in Starling reads it. :func:`install` removes those
  two callbacks; the figure then reads 0.
* **Looking for NumPy loops for operators on numbers: about 1.5 s.** To type ``a + b``,
  Numba tries its rule for operators on arrays first. That rule finds the NumPy ufunc loop
  for the arguments' types (``ufunc_find_matching_loop``, the slowest part of typing) and
  only then answers "not mine" when no argument is an array: 26,000 times in that cold
  start, never once with an array. :func:`install` makes the array test first; the
  answer is the same.
* **Reading an inlined function once per call site: 129 readings of 67 functions.** Each
  call of an ``inline="always"`` function makes Numba run its untyped passes on the
  function's bytecode again before copying the result into the caller. :func:`install`
  keeps the first reading (per function and what those passes read) and hands it to
  Numba's inliner, which copies it before changing anything: the inlining took 2.8–3.2 s,
  and takes 1.7–1.8 s.
* **Typing the same call again: 22,700 of 23,700 resolutions.** Every ``a * b`` or ``x[i]`` in
  every kernel makes Numba try each rule for the operator in turn (nine on average, each
  failure recorded with its message) until one answers, although an operator on the same
  types was answered the same way moments before. :func:`install` keeps each answer given by
  one of Numba's plain rules (not an ``@overload``, whose answer carries a compiled
  implementation chosen under the flags in force) per function, typing context, target and
  argument types, and gives it again.
* **Rebuilding SSA form over every block for each variable: 1.7 s.** Numba's SSA construction
  takes the variables assigned more than once one at a time and, for each, rewrites every
  block of the function twice (fresh names for the definitions, then each use to the
  definition that reaches it): a million block visits in that cold start, where a variable
  occurs in a few blocks. :func:`install` visits only the blocks where the variable is defined
  or used, the only ones Numba's handlers change, in Numba's order: the same statements, names
  and phi nodes (0.64 s).
* **Variable lifetimes nobody reads: 6.4 s.** Numba's IR post-processor runs after most
  passes, 1,901 times in that cold start, and each time computes the variables' uses and
  definitions, liveness, dead variables and the variables live into each block. Where it
  inserts ``del`` statements it needs them. Elsewhere, in a nopython compilation of a function
  that is no generator and uses no ``literal_unroll``, nothing reads them before the next
  post-processing replaces them, so there :func:`install` leaves them to be computed from the
  IR when first read (2.8 s).

All are patches to a pinned Numba: :func:`install` checks that what it replaces is what
it expects and otherwise leaves Numba as it is, so a newer Numba loses the time saved, not
correctness. ``tests/test_compiler_speed.py`` checks each answer against Numba's own.
``STARLING_COMPILER_SPEED=0`` leaves Numba unpatched (to compare).
"""
from __future__ import annotations

import functools
import os

__all__ = ["install", "numba_lock_timers"]

_installed = False
_numba_own: dict = {}  # what install() replaced, by name (for the tests' comparisons)
_kept_call_types: dict = {}  # plain rules' answers, by _call_type_key


def _uses(function, names: set) -> bool:
    """Whether ``function``'s code names all of ``names`` (how each patch checks that what it replaces
    is the code it was written against)."""
    return names <= set(getattr(getattr(function, "__code__", None), "co_names", ()))


def _fast_flags() -> None:
    """Give ``TargetConfig`` an equality and hash with Numba's results, computed from what is set."""
    from numba.core.targetconfig import TargetConfig

    if not (hasattr(TargetConfig, "options") and "_values" in getattr(TargetConfig, "__slots__", ())):
        return  # not the TargetConfig these shortcuts were written against
    numba_eq = TargetConfig.__eq__
    hashes: dict[type, int] = {}

    def __eq__(self, other):
        if type(self) is not type(other):
            return numba_eq(self, other)  # another class (or not flags at all): Numba's own answer
        mine, theirs = self._values, other._values
        if mine is theirs or mine == theirs:
            return True
        options = self.options
        for name in mine.keys() | theirs.keys():
            default = options[name].default
            a = mine.get(name, default)
            b = theirs.get(name, default)
            if not (a is b or a == b):  # (a dict's comparison: identity, then ==)
                return False
        return True

    def __hash__(self):
        # Numba's hash(tuple(sorted(self.values()))) sorts a dict, that is its keys: the option names
        cls = type(self)
        value = hashes.get(cls)
        if value is None:
            value = hashes[cls] = hash(tuple(sorted(cls.options)))
        return value

    TargetConfig.__eq__ = __eq__
    TargetConfig.__hash__ = __hash__


def numba_lock_timers() -> list:
    """The ``(acquire, release)`` callbacks on llvmlite's lock through which Numba times its hold on
    LLVM (registered when ``numba.core.base`` is imported); empty once :func:`install` removed them,
    or where llvmlite keeps its callbacks elsewhere."""
    from llvmlite.binding import ffi

    callbacks = getattr(getattr(ffi.lib, "_lock", None), "_cblist", ())
    return [(acquire, release) for acquire, release in callbacks
            if getattr(acquire, "__module__", "") == "numba.core.base"
            and "_initialize_llvm_lock_event" in getattr(acquire, "__qualname__", "")]


def _untimed_llvm_lock() -> None:
    """Remove the callbacks through which Numba times its hold on LLVM's lock (see the module)."""
    from llvmlite.binding import ffi

    for acquire, release in numba_lock_timers():
        ffi.unregister_lock_callback(acquire, release)


def _operators_on_numbers() -> None:
    """Let an operator on numbers skip the search for a NumPy loop whose answer is discarded (see the
    module)."""
    from numba.core import types
    from numba.core.typing.npydecl import NumpyRulesArrayOperator

    numba_generic = NumpyRulesArrayOperator.__dict__.get("generic")
    code = getattr(numba_generic, "__code__", None)
    tests = [getattr(const, "co_names", ()) for const in (code.co_consts if code else ())]
    if ("isinstance", "types", "ArrayCompatible") not in tests:
        return  # not the rule this was written against (its last test, in a generator)

    def generic(self, args, kws):
        # Numba's rule strips optional types, finds the ufunc loop, then answers None unless an
        # argument is an array: the same test, made first
        for arg in args:
            if isinstance(arg.type if isinstance(arg, types.Optional) else arg, types.ArrayCompatible):
                return numba_generic(self, args, kws)
        return None

    _numba_own["operator_generic"] = numba_generic
    NumpyRulesArrayOperator.generic = generic


def _inline_key(worker, function):
    """What the untyped passes of an inlined ``function`` depend on besides its code (the flags
    those passes read, the typing context, the kind of target: each compilation has a target
    context of its own), or ``None`` where they could depend on more: a caller with local type
    declarations, which the passes carry into the callee. Like a compiled kernel, a stored reading
    keeps the module globals it read (constants), even if the module reassigns one later."""
    flags = worker.flags
    if flags is None or worker.locals:
        return None
    parallel = flags.auto_parallel  # its options live in slots
    return (function, worker.typingctx, type(worker.targetctx), type(worker.pipeline), flags.no_rewrites,
            flags.enable_looplift, tuple(getattr(parallel, name) for name in type(parallel).__slots__))


def _inline_from_one_reading() -> None:
    """Read each ``inline="always"`` function's code into Numba IR once per process, not once per call
    site (see the module)."""
    from numba.core.compiler import Flags
    from numba.core.cpu_options import ParallelOptions
    from numba.core.inline_closurecall import InlineWorker

    numba_inline = InlineWorker.inline_function
    if (numba_inline.__code__.co_names != ("run_untyped_passes", "__code__", "co_freevars", "inline_ir")
            or not {"no_rewrites", "enable_looplift", "auto_parallel"} <= Flags.options.keys()
            or "__slots__" not in ParallelOptions.__dict__):
        return  # not the inliner, or not the flags _inline_key reads, this was written against
    read: dict = {}

    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        key = _inline_key(self, function)
        callee_ir = read.get(key) if key is not None else None
        if callee_ir is None:
            callee_ir = self.run_untyped_passes(function)
            if key is not None:
                read[key] = callee_ir
        else:
            self.flags.enable_ssa = False  # as run_untyped_passes leaves the caller's flags
        # inline_ir works on a deep copy of the callee's blocks, so the IR read here stays as read
        return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)

    _numba_own["inline_function"] = numba_inline
    InlineWorker.inline_function = inline_function


def _call_type_key(function, context, args, kws):
    """What a plain rule's answer for a call depends on: the function (its type holds its rules),
    the typing context, the target (it orders the rules) and the argument types."""
    from numba.core.target_extension import get_local_target

    return function, context, get_local_target(context), tuple(args), tuple(kws.items()) if kws else ()


def _call_types_kept() -> None:
    """Give a function type's answer for the same argument types again instead of trying its rules
    again (see the module)."""
    from numba.core.types.functions import BaseFunction

    numba_get_call_type = BaseFunction.get_call_type
    if not _uses(numba_get_call_type, {"get_local_target", "get_impl_key", "_impl_keys"}):
        return  # not the resolution this was written against
    kept = _kept_call_types

    def get_call_type(self, context, args, kws):
        try:
            key = _call_type_key(self, context, args, kws)
            sig = kept.get(key)
        except TypeError:  # an unhashable argument type: Numba's own way
            return numba_get_call_type(self, context, args, kws)
        if sig is not None:
            self._impl_keys[sig.args] = self.typing_key  # as a plain rule's answer sets it
            return sig
        sig = numba_get_call_type(self, context, args, kws)
        # kept only where a plain rule answered: its implementation is the function's own key, where
        # an @overload's or intrinsic's is what it compiled or registered for these flags
        if sig is not None and self._impl_keys.get(sig.args) is self.typing_key:
            kept[key] = sig
        return sig

    _numba_own["get_call_type"] = numba_get_call_type
    BaseFunction.get_call_type = get_call_type


def _ssa_where_names_occur() -> None:
    """Rebuild SSA form touching only the blocks that define or use each renamed variable (see the
    module)."""
    from collections import defaultdict

    from numba.core import errors, ir, ssa
    from numba.core.utils import OrderedSet

    if not (_uses(ssa._run_ssa, {"_find_defs_violators", "_fresh_vars", "_fix_ssa_vars", "_CacheListVars",
                                 "_iterated_domfronts", "compute_cfg_from_blocks"})
            and _uses(ssa._fix_ssa_vars, {"_make_states", "_compute_phi_locations", "_run_block_rewrite",
                                          "_FixSSAVars"})
            and _uses(ssa._fresh_vars, {"_make_states", "_run_block_rewrite", "_FreshVarHandler"})
            and _uses(ssa._run_block_rewrite, {"_run_ssa_block_pass"})
            and _uses(ssa._find_defs_violators, {"_run_block_analysis", "_GatherDefsHandler", "dominators"})):
        return  # not the SSA construction this was written against
    numba_run_ssa = ssa._run_ssa

    def violators_and_places(blocks, cfg):
        # Numba's _find_defs_violators, line for line, but keeping where each name is defined and
        # used (calling Numba's and gathering those again would read every statement twice)
        defs, uses = defaultdict(list), defaultdict(set)
        ssa._run_block_analysis(blocks, dict(defs=defs, uses=uses), ssa._GatherDefsHandler())
        violators = OrderedSet([name for name, places in defs.items() if len(places) > 1])
        doms = cfg.dominators()
        for name, use_labels in uses.items():
            if name not in violators:
                def_labels = {label for _assign, label in defs[name]}
                if any(not def_labels.intersection(doms[label]) for label in use_labels):
                    violators.add(name)
        return violators, defs, uses

    def rewrite(blocks, labels, position, states, handler):
        # Numba's _run_block_rewrite on ``labels`` only, in the blocks' order (``position``):
        # elsewhere the handler returns every statement as it is and changes nothing (the name
        # is neither defined nor used there)
        for label in sorted(labels, key=position.__getitem__):
            block = blocks[label]
            states["label"], states["block"] = label, block
            new = ir.Block(scope=block.scope, loc=block.loc)
            new.body = list(ssa._run_ssa_block_pass(states, block, handler))
            blocks[label] = new

    def run_ssa(blocks):
        if not blocks:
            return {}
        cfg = ssa.compute_cfg_from_blocks(blocks)
        df_plus = ssa._iterated_domfronts(cfg)
        violators, defs, uses = violators_and_places(blocks, cfg)
        if not violators:
            return blocks  # as Numba's: nothing renamed, the same blocks
        cache_list_vars = ssa._CacheListVars()
        position = {label: i for i, label in enumerate(blocks)}
        out = dict(blocks)
        for name in violators:
            defined = {label for _assign, label in defs[name]}
            states = ssa._make_states(out)
            states.update(varname=name, defmap=defaultdict(list))
            rewrite(out, defined, position, states, ssa._FreshVarHandler())  # a fresh name for each definition
            defmap, phimap = states["defmap"], defaultdict(list)
            states = ssa._make_states(out)
            states.update(varname=name, defmap=defmap, phimap=phimap, cfg=cfg,
                          phi_locations=ssa._compute_phi_locations(df_plus, defmap))
            rewrite(out, defined | uses[name], position, states, ssa._FixSSAVars(cache_list_vars))  # uses to definitions
            for label, phis in phimap.items():
                block = out[label]
                out[label] = new = ir.Block(scope=block.scope, loc=block.loc)
                new.body = phis + block.body
        for label, block in out.items():  # Numba's rewrites give every block anew; so does this
            if block is blocks[label]:
                out[label] = block.copy()
        if ssa.compute_cfg_from_blocks(out) != cfg:
            raise errors.CompilerError("CFG mutated in SSA pass")
        return out

    _numba_own["run_ssa"] = numba_run_ssa
    ssa._run_ssa = run_ssa


class _EntryVarsWhenRead(dict):
    """A function's variables live on entry to each block, by block (``FunctionIR.block_entry_vars``),
    computed when first read. Only object-mode lowering and generators read them."""

    def __init__(self, earlier: dict, blocks: dict, lifetime) -> None:
        # what was computed before, as Numba's post-processor adds to it; an earlier entry still
        # pending is for blocks of an IR since changed, which this one's blocks replace
        super().__init__(dict.items(earlier))
        self._pending = (blocks, lifetime)

    def _fill(self) -> None:
        if self._pending is not None:
            from numba.core import analysis

            blocks, lifetime = self._pending
            self._pending = None
            live = analysis.compute_live_variables(lifetime.cfg, blocks, lifetime.usedefs.defmap,
                                                   lifetime.deadmaps.combined)
            for label, block in blocks.items():
                self[block] = live[label]

    def __missing__(self, block):
        if self._pending is None:
            raise KeyError(block)
        self._fill()
        return self[block]

    def __contains__(self, block) -> bool:
        self._fill()
        return super().__contains__(block)

    def get(self, block, default=None):
        self._fill()
        return super().get(block, default)

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def keys(self):
        self._fill()
        return super().keys()

    def values(self):
        self._fill()
        return super().values()

    def items(self):
        self._fill()
        return super().items()

    def copy(self) -> dict:
        self._fill()
        return dict(self)


def _unrolls_literally(blocks: dict, literal_unroll) -> bool:
    """Whether the IR calls ``literal_unroll``, the one nopython pass that reads variable lifetimes
    computed by an earlier post-processing (the test of Numba's own ``LiteralUnroll`` pass)."""
    from numba.core import ir

    for block in blocks.values():
        for stmt in block.body:
            if type(stmt) is ir.Assign and type(stmt.value) in (ir.Global, ir.FreeVar) \
                    and stmt.value.value is literal_unroll:
                return True
    return False


def _lifetimes_when_read() -> None:
    """Let the IR post-processor leave variable lifetimes to be computed when read (see the module)."""
    from numba.core import postproc, transforms
    from numba.core.targetconfig import ConfigStack
    from numba.misc.special import literal_unroll

    numba_run = postproc.PostProcessor.run
    if not (_uses(numba_run, {"canonicalize_cfg", "VariableLifetime", "compute_live_variables",
                              "block_entry_vars", "is_generator", "_insert_var_dels"})
            and isinstance(postproc.VariableLifetime.__dict__.get("usedefs"), functools.cached_property)):
        return  # not the post-processor this was written against

    def run(self, emit_dels: bool = False, extend_lifetimes: bool = False):
        func_ir = self.func_ir
        flags = ConfigStack.top_or_none()
        if (emit_dels or flags is None or getattr(flags, "force_pyobject", True) or func_ir.is_generator
                or _unrolls_literally(func_ir.blocks, literal_unroll)):
            if type(func_ir.block_entry_vars) is _EntryVarsWhenRead:  # Numba's run computes the rest anew
                func_ir.block_entry_vars = dict(dict.items(func_ir.block_entry_vars))
            return numba_run(self, emit_dels, extend_lifetimes)
        func_ir.blocks = transforms.canonicalize_cfg(func_ir.blocks)
        lifetime = postproc.VariableLifetime(func_ir.blocks)  # its analyses run when first read
        func_ir.variable_lifetime = lifetime
        func_ir.block_entry_vars = _EntryVarsWhenRead(func_ir.block_entry_vars, func_ir.blocks, lifetime)
        func_ir.generator_info = None

    _numba_own["postprocess"] = numba_run
    postproc.PostProcessor.run = run


def install() -> None:
    """Apply the changes, once per process (before kernels compile; see the module)."""
    global _installed
    if _installed or os.environ.get("STARLING_COMPILER_SPEED", "1") == "0":
        return
    _installed = True
    import numba.core.base  # noqa: F401  (registers the lock callbacks that are removed)

    _fast_flags()
    _untimed_llvm_lock()
    _operators_on_numbers()
    _inline_from_one_reading()
    _call_types_kept()
    _ssa_where_names_occur()
    _lifetimes_when_read()
