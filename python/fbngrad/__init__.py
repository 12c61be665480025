"""fbngrad: TensorFlow's FusedBatchNormGradV2 as Halide AOT kernels, for frameworks.

Each framework integration is a subpackage that loads its own shared library
(built from integrations/<framework>/ over libfbngrad.a) when imported:

    import fbngrad.tensorflow   # TensorFlow: kernels for FusedBatchNormGradV2/V3 (docs/tensorflow.md)

Importing `fbngrad` itself loads no framework.
"""

import os as _os

__all__ = ["library_path"]


def library_path(integration, name):
    """The path of an integration's shared library `name`, installed beside its subpackage.

    `integration` is the subpackage's name ("tensorflow", ...). Raises ImportError,
    saying how to rebuild, when the package was built without that integration.
    """
    path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), integration, name)
    if not _os.path.exists(path):
        raise ImportError(
            f"fbngrad was built without its {integration} integration ({path} is missing): "
            f"install {integration} first, then reinstall fbngrad with "
            f"`pip install --no-build-isolation <fbngrad repository>` so that the build sees it")
    return path
