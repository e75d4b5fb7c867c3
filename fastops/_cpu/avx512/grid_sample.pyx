# grid_sample built for x86-64-v4 (see __init__.py): the same source, included
include "../grid_sample.pyx"
