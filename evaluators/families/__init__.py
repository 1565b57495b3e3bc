"""The benchmark families, each one registered plug-in over a pure functional core."""
