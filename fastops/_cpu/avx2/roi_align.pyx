# roi_align built for x86-64-v3 (see __init__.py): the same source, included
include "../roi_align.pyx"
