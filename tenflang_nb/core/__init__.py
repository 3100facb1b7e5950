"""The TenFlang core: text -> program -> graph -> GCP -> execution plan -> results.

Imports numpy only (never IPython). See ``api.py`` for the functions most users need.
"""
