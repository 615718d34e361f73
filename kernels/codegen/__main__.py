"""python -m kernels.codegen [--check]"""

from . import main

raise SystemExit(main())
