"""Lowering for large arrays: elementwise regions and maps become fused kernels."""
