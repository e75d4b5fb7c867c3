# cv_resize built for x86-64-v4 (see __init__.py): the same source, included
include "../cv_resize.pyx"
