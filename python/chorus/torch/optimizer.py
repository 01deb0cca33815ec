"""horovod.torch's DistributedOptimizer: the wrapped optimizer's own class,
whose gradients are allreduced while backward still runs (a hook per
parameter starts each one as soon as autograd has accumulated it), and
whose step() first waits for them."""
import contextlib
import inspect
import os
import warnings

import torch

from .. import ops as O
from ..basics import size
from ..elastic import enabled as elastic_job
from ..process_sets import global_process_set
from .compression import Compression
from .flat_gradients import flatten
from .mpi_ops import allreduce_async_, grouped_allreduce_async_, sparse_allreduce_async


# What torch's own Optimizer.zero_grad() does by default (False in 1.13, True from 2.0).
_TORCH_SETS_TO_NONE = inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default


def _named(optimizer_params, named_parameters):
    """(name, parameter) pairs, checked as Horovod checks them (before init is needed)."""
    if named_parameters is None:
        return [(f"allreduce.noname.{i}.{j}", p) for i, group in enumerate(optimizer_params)
                for j, p in enumerate(group["params"])]
    named = list(named_parameters)
    if any(not isinstance(p, tuple) for p in named):
        raise ValueError("named_parameters should be a sequence of tuples (name, parameter), usually produced by "
                         "model.named_parameters()")
    names = [k for k, _ in named]
    duplicates = sorted({k for k in names if names.count(k) > 1})
    if duplicates:
        raise ValueError(f"Parameter names in named_parameters must be unique. Found duplicates: {', '.join(duplicates)}")
    named_ids = {id(p) for _, p in named}
    unnamed = [p for group in optimizer_params for p in group["params"] if id(p) not in named_ids]
    if unnamed:
        raise ValueError(f"named_parameters was specified, but one or more model parameters were not named "
                         f"({len(unnamed)} of them). Python object ids: {', '.join(str(id(p)) for p in unnamed)}")
    return named


class _DistributedOptimizer(torch.optim.Optimizer):
    _chorus_distributed = True  # broadcast_optimizer_state steps the wrapped class, not this one

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        named = _named(self.param_groups, named_parameters)
        self._compression = compression
        self._parameter_names = {p: k for k, p in sorted(named, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for _, p in named}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._handles = {}          # parameter, or tuple of a group's parameters -> (handle, ctx)
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        self._group_of, self._group_ready = self._make_groups(groups)
        # Flat gradients (flat_gradients.py): the order hooks fired in the first step, then the buffers.
        self._flat = compression is Compression.none
        self._hook_order = []
        self._flat_buffers = None
        # An elastic job registers its hooks at one rank too: the world may grow.
        if process_set.included() and (size() > 1 or os.environ.get("HOROVOD_ELASTIC") == "1" or elastic_job()):
            self._register_hooks()

    # --- groups ----------------------------------------------------------------
    def _make_groups(self, groups):
        """param -> its group (a tuple), for grouped allreduces; empty without groups."""
        ordered = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        if groups is None or groups == 0:
            return {}, {}
        if isinstance(groups, int):
            k = max(1, min(groups, len(ordered)))
            chunks = [tuple(ordered[i::k]) for i in range(k)]
        else:
            chunks = [tuple(g) for g in groups]
            listed = {id(p) for g in chunks for p in g}
            if any(id(p) not in {id(q) for q in ordered} for g in chunks for p in g):
                raise ValueError("groups: a parameter in groups is not among the optimizer's parameters")
            chunks += [(p,) for p in ordered if id(p) not in listed]
        group_of = {p: g for g in chunks for p in g if len(g) > 0}
        return group_of, {g: set() for g in chunks}

    # --- hooks -------------------------------------------------------------------
    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                self._requires_update.add(p)
                if hasattr(p, "register_post_accumulate_grad_hook"):  # torch >= 2.1
                    self._grad_accs.append(p.register_post_accumulate_grad_hook(self._make_hook(p)))
                else:  # the gradient accumulator's hook, as Horovod on older torch
                    grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    grad_acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(grad_acc)

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None and self._allreduce_delay[p] <= 0:
                raise AssertionError("Gradients were computed more than backward_passes_per_step times before call "
                                     "to step(). Increase backward_passes_per_step to accumulate gradients locally.")
            self._allreduce_delay[p] -= 1
            if self._flat_buffers is None:
                self._hook_order.append(p)
            handle, ctx = None, None
            if self._allreduce_delay[p] == 0:
                group = self._group_of.get(p)
                if group is not None:
                    self._group_ready[group].add(p)
                    if len(self._group_ready[group]) == len(group):
                        self._handles[group] = self._grouped_allreduce_async(group)
                    return
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    # --- the allreduces ------------------------------------------------------------
    def _scales(self):
        if self.op == O.Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _grad_of(self, p):
        if p.grad is None:  # a parameter this rank's graph did not reach: zeros, so every rank reduces the same set
            p.grad = torch.zeros_like(p)
        return p.grad

    def _allreduce_grad_async(self, p):
        name = self._parameter_names.get(p)
        tensor = self._grad_of(p)
        if tensor.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(tensor, name=name, op=self.op, process_set=self.process_set), "sparse"
            tensor = tensor.to_dense()
        compressed, ctx = self._compression.compress(tensor)
        pre, post = self._scales()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=pre, postscale_factor=post,
                                  process_set=self.process_set)
        return handle, (ctx, tensor)

    def _grouped_allreduce_async(self, group):
        grads = []
        for p in group:
            g = self._grad_of(p)
            grads.append(g.to_dense() if g.is_sparse else g)
        packed = [self._compression.compress(g) for g in grads]
        pre, post = self._scales()
        handle = grouped_allreduce_async_([c for c, _ in packed], name=self._parameter_names.get(group[0]),
                                          op=self.op, prescale_factor=pre, postscale_factor=post,
                                          process_set=self.process_set)
        return handle, [(ctx, g) for (_, ctx), g in zip(packed, grads)]

    # --- synchronize, step ---------------------------------------------------------
    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hook has not
        fired, with zeros for a missing gradient) and writes the results into .grad."""
        if not self.process_set.included():
            self._synchronized = True
            return
        self._launch_missing()
        for key, (handle, ctx) in self._handles.items():
            output = handle.wait()
            if isinstance(key, tuple):
                self._group_ready[key].clear()
                for p, out, c in zip(key, output, ctx):
                    self._write_grad(p, out, c)
            else:
                self._write_grad(key, output, ctx)
        self._handles.clear()
        self._synchronized = True

    def _launch_missing(self):
        launched = set()
        for key, (handle, _) in self._handles.items():
            if handle is not None:
                launched.update(key if isinstance(key, tuple) else (key,))
        for group, ready in self._group_ready.items():
            if not all(p in launched for p in group) and any(p in self._requires_update for p in group):
                self._handles[group] = self._grouped_allreduce_async(group)
                launched.update(group)
        for p in self._requires_update:
            if p not in launched:
                self._handles[p] = self._allreduce_grad_async(p)

    def _write_grad(self, p, output, ctx):
        self._allreduce_delay[p] = self.backward_passes_per_step
        if ctx == "sparse":
            p.grad = output.coalesce()
            return
        wire_ctx, sent = ctx
        result = self._compression.decompress(output, wire_ctx)
        if p.grad.is_sparse:  # sparse_as_dense: back to the gradient's layout
            p.grad = result.to_sparse()
        elif result.data_ptr() != p.grad.data_ptr():
            p.grad.copy_(result)

    @contextlib.contextmanager
    def skip_synchronize(self):
        """step() inside this block does not synchronize again (after an explicit
        synchronize(), e.g. to clip gradients or unscale them for AMP)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() context after "
                              "optimizer.synchronize(). This can cause training slowdown. You may want to consider "
                              "using optimizer.skip_synchronize() context if you use optimizer.synchronize() in your "
                              "code.")
            self.synchronize()
        self._synchronized = False
        result = super(self.__class__, self).step(closure)
        if self._flat and self._flat_buffers is None and self._hook_order:
            seen = set()
            order = [p for p in self._hook_order if not (p in seen or seen.add(p))]
            self._flat_buffers, self._flat_where = flatten(order)
        return result

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before optimizer.step() "
                                 "or optimizer.synchronize(). This is prohibited as it can cause a race condition.")
        if not self._flat_buffers:
            return super(self.__class__, self).zero_grad(*args, **kwargs)
        # Zeroed where they lie (one fill per buffer), so the gradients stay in the flat
        # buffers; any other gradient as torch's zero_grad treats it.
        set_to_none = kwargs.get("set_to_none", args[0] if args else _TORCH_SETS_TO_NONE)
        for flat in self._flat_buffers:
            flat.zero_()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or self._flat_where.get(p) == p.grad.data_ptr():
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()
        return None

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def load_state_dict(self, *args, **kwargs):
        self._handles.clear()
        for ready in self._group_ready.values():
            ready.clear()
        self.set_backward_passes_per_step(self.backward_passes_per_step)
        return super(self.__class__, self).load_state_dict(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none, backward_passes_per_step=1,
                         op=O.Average, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=global_process_set):
    """Wraps `optimizer` (Horovod's signature): an instance of a subclass of
    its class, built from its param_groups, whose gradients are allreduced
    (`op`, Average by default) during backward under the parameters' names;
    every `backward_passes_per_step` passes, gradients accumulate locally in
    between. `gradient_predivide_factor` splits Average's division between
    before and after the sum; `compression` (Compression.fp16, .bf16) halves
    the bytes; `groups` (an int, or lists of parameters) sends grouped
    allreduces; sparse gradients go as sparse allreduces unless
    `sparse_as_dense`; only members of `process_set` reduce."""
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if gradient_predivide_factor != 1.0 and op != O.Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed.", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if groups is not None and not (isinstance(groups, int) and groups >= 0 or isinstance(groups, list)
                                   and all(isinstance(g, list) for g in groups)):
        raise ValueError("groups should be a non-negative integer or a list of lists of torch.Tensor")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, groups, sparse_as_dense, process_set)
