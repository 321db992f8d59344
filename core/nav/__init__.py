"""Detour's side: reads a finished bake, never runs the pipeline."""
