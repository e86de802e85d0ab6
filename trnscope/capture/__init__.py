"""Record clean PyTorch profiles and variant sets (needs torch).

from trnscope.capture import CaptureOptions, compare, record
"""

from trnscope.capture.recorder import CaptureOptions, compare, record, region
from trnscope.capture.runscript import mark_step

__all__ = ["CaptureOptions", "compare", "mark_step", "record", "region"]
