"""Suite-wide settings: no test may reach a model hub (there is no network here)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
