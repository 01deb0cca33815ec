"""chorus.keras under horovod.tensorflow.keras's path: `import
chorus.tensorflow.keras as hvd`."""
from ..keras import *  # noqa: F401,F403
from ..keras import callbacks, elastic  # noqa: F401
