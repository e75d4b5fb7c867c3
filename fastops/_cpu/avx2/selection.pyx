# selection built for x86-64-v3 (see __init__.py): the same source, included
include "../selection.pyx"
