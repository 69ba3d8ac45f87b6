"""The MuJoCo dual-arm cell: model composition, action executor, cameras, reset, scripted expert.

Importing it changes nothing in the process: the entry points that render call ``sim.gl.choose_gl_backend`` before
MuJoCo is first imported.
"""
