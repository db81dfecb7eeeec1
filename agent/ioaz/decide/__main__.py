"""`python -m ioaz.decide FILE...`: validate matrices, policies.yaml or an ioazd config."""
import sys

from .validate import main

sys.exit(main())
