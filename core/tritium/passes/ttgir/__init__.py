"""TTGIR passes: the TTIR -> TTGIR conversion and the layout optimisations (one pass a file)."""
