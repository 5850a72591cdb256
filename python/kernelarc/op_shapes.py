"""A definition's axes bound from the input shapes, and its outputs' shapes and dtypes from them:
what a torch op needs to allocate the outputs of a destination-passing kernel (and what its
fake implementation returns under torch.compile)."""

import ast
import operator

import torch

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    # Exact by the format's rule (docs/FORMAT.md, "Expressions"), so integer division is the same.
    ast.Div: operator.floordiv,
}


def torch_dtype(name, where):
    dtype = getattr(torch, name, None)  # the format's dtype names are torch's
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"{where}: dtype {name!r} has no torch dtype in torch {torch.__version__}")
    return dtype


def _evaluate(node, values, expression):
    """The integer arithmetic of the format's axis expressions, over ints or torch SymInts."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, values, expression)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise KeyError(node.id)
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left, values, expression),
                                      _evaluate(node.right, values, expression))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, values, expression)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id in ("min", "max") and not node.keywords):
        args = [_evaluate(arg, values, expression) for arg in node.args]
        return (min if node.func.id == "min" else max)(args)
    raise ValueError(f"axis expression {expression!r}: only integer arithmetic, min and max are "
                     f"supported in output shapes")


def _axis_names(expression):
    return {node.id for node in ast.walk(ast.parse(expression, mode="eval"))
            if isinstance(node, ast.Name) and node.id not in ("min", "max")}


class OpShapes:
    """The definition's inputs and outputs, with how to get the outputs' shapes from the inputs'."""

    def __init__(self, definition):
        self.name = definition["name"]
        self.inputs = list(definition["inputs"].items())
        self.outputs = list(definition["outputs"].items())
        self.constants = {}
        self.expressions = {}
        for axis, spec in definition.get("axes", {}).items():
            kind = spec.get("type") or ("const" if "value" in spec else
                                        "expr" if "expression" in spec else "var")
            if kind == "const":
                self.constants[axis] = spec["value"]
            elif kind == "expr":
                self.expressions[axis] = spec["expression"]
        self.output_dtypes = [torch_dtype(spec["dtype"], f"{self.name}: outputs.{name}")
                              for name, spec in self.outputs]

    def bind_axes(self, args):
        """Axis values from the tensor arguments (in definition order), then the expr axes, and
        var axes that only an expr axis carries (an affine one: "2 * intermediate_size")."""
        values = dict(self.constants)
        for (name, spec), arg in zip(self.inputs, args):
            shape = spec.get("shape")
            if not shape:
                continue
            if arg.dim() != len(shape):
                raise ValueError(f"{self.name}: input {name}: expected {len(shape)} dimensions "
                                 f"({', '.join(shape)}), got a tensor of shape {tuple(arg.shape)}")
            for dim, axis in enumerate(shape):
                if not axis.isdigit():
                    values.setdefault(axis, arg.shape[dim])
        self._resolve_expressions(values)
        return values

    def _resolve_expressions(self, values):
        pending = dict(self.expressions)
        while pending:
            progressed = False
            for axis, expression in list(pending.items()):
                tree = ast.parse(expression, mode="eval")
                unknown = _axis_names(expression) - values.keys()
                if not unknown:
                    if axis not in values:
                        values[axis] = _evaluate(tree, values, expression)
                    del pending[axis]
                    progressed = True
                elif len(unknown) == 1 and axis in values:
                    (var,) = unknown
                    values[var] = self._solve_affine(tree, expression, values, var, values[axis])
                    del pending[axis]
                    progressed = True
            if not progressed:
                return

    @staticmethod
    def _solve_affine(tree, expression, values, var, target):
        at_zero = _evaluate(tree, {**values, var: 0}, expression)
        slope = _evaluate(tree, {**values, var: 1}, expression) - at_zero
        if not isinstance(slope, int) or slope == 0:
            raise ValueError(f"axis expression {expression!r}: cannot tell {var} from it")
        return (target - at_zero) // slope

    def output_shapes(self, values):
        shapes = []
        for name, spec in self.outputs:
            shape = []
            for axis in spec.get("shape") or []:
                if axis.isdigit():
                    shape.append(int(axis))
                elif axis in values:
                    shape.append(values[axis])
                else:
                    raise ValueError(f"{self.name}: output {name}: axis {axis} is carried by no "
                                     f"input, so the output's shape is unknown")
            shapes.append(shape)
        return shapes

    def allocate_outputs(self, args):
        """Empty outputs on the first tensor argument's device (fake tensors under tracing)."""
        tensors = [arg for arg in args if isinstance(arg, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        shapes = self.output_shapes(self.bind_axes(args))
        return [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype in zip(shapes, self.output_dtypes)]

    def signature(self):
        """The op's functional schema without its name: inputs (scalars as float, int or bool)
        -> outputs."""
        params = []
        for name, spec in self.inputs:
            if spec.get("shape") is None:
                dtype = spec["dtype"]
                kind = ("bool" if dtype == "bool" else
                        "int" if dtype.startswith(("int", "uint")) else "float")
                params.append(f"{kind} {name}")
            else:
                params.append(f"Tensor {name}")
        returns = ("Tensor" if len(self.outputs) == 1 else
                   "(" + ", ".join("Tensor" for _ in self.outputs) + ")")
        return f"({', '.join(params)}) -> {returns}"
