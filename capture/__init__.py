"""Record clean PyTorch profiles and variant sets (needs torch).

from capture import CaptureOptions, compare, record
"""

from capture.recorder import CaptureOptions, compare, record, region
from capture.runscript import mark_step

__all__ = ["CaptureOptions", "compare", "mark_step", "record", "region"]
