"""The operator registry. `lookup("nn.conv2d")` returns the OpDef; `all_ops()` every one."""

from .registry import OpDef, OpPattern, all_ops, attrs_to_dict, lookup, make_attrs, register

__all__ = ["OpDef", "OpPattern", "all_ops", "attrs_to_dict", "lookup", "make_attrs", "register"]
