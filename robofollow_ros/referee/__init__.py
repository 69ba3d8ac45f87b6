"""The referee: trajectory -> stage-wise Intent / Execution scores, Completion, result records, reports.

Pure Python + numpy: the referee node, offline bag scoring and in-process runs share this code.
"""
