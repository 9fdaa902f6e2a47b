"""Importing this package registers every built-in AllReduce algorithm."""

from kernels.algorithms import halving_doubling, hierarchical, naive, ring, tree

__all__ = ["halving_doubling", "hierarchical", "naive", "ring", "tree"]
