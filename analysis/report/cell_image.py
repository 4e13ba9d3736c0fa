"""A heatmap's cells drawn with the pixels matplotlib draws, without its full-size float arrays.

matplotlib draws an ``imshow`` of scalar data by resampling the data to the
axes' pixels as float64, resampling a float32 mask beside it, normalising and
colour-mapping the result: some 40 bytes per pixel of temporary arrays. A
report's heatmap grows with the roster (0.7 x 0.6 inch a cell), so a 100-unit
matrix's image is 28 million pixels and drawing it took about 2 GB, the peak of
the whole report.

A heatmap upsampled by more than three pixels a cell is resampled by nearest
neighbour: each pixel shows one cell's value. :class:`CellImage` therefore
colours each *cell* once (the same norm and colour map on the same float values,
so the same bytes) and resamples only which cell each pixel shows (a ``uint16``
cell number, 2 bytes a pixel), then fills the RGBA output from the cells'
colours a band of rows at a time. Any other case (smoothing, alpha arrays, a
norm without limits, more cells than a ``uint16`` numbers) is left to
matplotlib's own path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.image import AxesImage, _resample
from matplotlib.transforms import Affine2D, Bbox, IdentityTransform

__all__ = ["CellImage", "lean_cells"]

#: Output rows filled per step: bounds the index array ``np.take`` makes (8 bytes a pixel) to one band.
_BAND_ROWS = 256


class CellImage(AxesImage):
    """An :class:`~matplotlib.image.AxesImage` whose nearest-neighbour upsampling colours cells, not pixels."""

    def _make_image(self, A: Any, in_bbox: Any, out_bbox: Any, clip_bbox: Any, magnification: float = 1.0,
                    unsampled: bool = False, round_to_pixel_border: bool = True) -> Any:
        placed = None if unsampled or not self._cells_only(A) else \
            _placement(self, A, in_bbox, out_bbox, clip_bbox, magnification, round_to_pixel_border)
        if placed is None or not _nearest(self, A, placed[1]):
            return super()._make_image(A, in_bbox, out_bbox, clip_bbox, magnification, unsampled,
                                       round_to_pixel_border)
        bbox, t, out_shape = placed
        numbers = np.arange(1, A.size + 1, dtype=np.uint16).reshape(A.shape)
        cells = _resample(self, numbers, out_shape, t)  # 0 where no cell covers the pixel
        return self._spread(A, cells), bbox.x0 / magnification, bbox.y0 / magnification, t

    def _cells_only(self, A: Any) -> bool:
        """Whether drawing ``A`` can be done cell by cell (else matplotlib's own path runs)."""
        alpha = self.get_alpha()
        return (A.ndim == 2 and A.dtype == np.float64 and A.size < 2 ** 16 - 1
                and self._interpolation_stage in ("antialiased", "auto", "data")
                and (alpha is None or np.ndim(alpha) == 0)
                and not isinstance(self.norm, mcolors.NoNorm) and self.norm.scaled())

    def _spread(self, A: Any, cells: np.ndarray) -> np.ndarray:
        """RGBA bytes of every pixel: its cell's colour, as matplotlib's data path computes it per pixel.

        That path resamples the values (a pixel no cell covers gets 0.0) and a mask
        (1 in a cell, NaN in a masked cell, 0 outside), colours the masked values,
        then scales the alpha byte by the mask's 1 or 0 and the image's alpha.
        """
        values = np.ma.masked_array(np.concatenate([[0.0], np.asarray(A.data, np.float64).ravel()]),
                                    np.concatenate([[False], np.ma.getmaskarray(A).ravel()]))
        colours = self.to_rgba(self.norm(values), bytes=True, norm=False)
        coverage = np.ones(len(values), np.float32)
        coverage[0] = 0
        colours[:, 3] = colours[:, 3].astype(np.float32) * coverage * self._get_scalar_alpha()
        out = np.empty(cells.shape + (4,), np.uint8)
        for r in range(0, cells.shape[0], _BAND_ROWS):
            np.take(colours, cells[r:r + _BAND_ROWS], axis=0, out=out[r:r + _BAND_ROWS])
        return out


def _placement(image: AxesImage, A: Any, in_bbox: Any, out_bbox: Any, clip_bbox: Any, magnification: float,
               round_to_pixel_border: bool) -> tuple[Any, Any, tuple[int, int]] | None:
    """The pixel box, the image-to-pixel transform and the output shape, as ``AxesImage._make_image`` computes
    them (matplotlib 3.11); None when nothing is drawn (matplotlib's path then says so itself)."""
    clipped = Bbox.intersection(out_bbox, clip_bbox)
    if clipped is None:
        return None
    e = clipped.extents * magnification
    if round_to_pixel_border:
        bbox = Bbox.from_extents([np.floor(e[0] + 0.5), np.ceil(e[1] - 0.5 - 1e-8),
                                  np.floor(e[2] + 0.5 + 1e-8), np.ceil(e[3] - 0.5)])
    else:
        bbox = Bbox.from_extents(e)
    if bbox.width == 0 or bbox.height == 0:
        return None
    t0 = Affine2D().translate(0, -A.shape[0]).scale(1, -1) if image.origin == "upper" else IdentityTransform()
    t0 += (Affine2D().scale(in_bbox.width / A.shape[1], in_bbox.height / A.shape[0]).translate(in_bbox.x0, in_bbox.y0)
           + image.get_transform())
    t = t0 + Affine2D().scale(magnification).translate(-bbox.x0, -bbox.y0)
    return bbox, t, (int(bbox.height), int(bbox.width))


def _nearest(image: AxesImage, A: Any, t: Any) -> bool:
    """Whether matplotlib resamples ``A`` under ``t`` at the data stage by nearest neighbour (each pixel one cell)."""
    pos = np.array([[0, 0], [A.shape[1], A.shape[0]]])
    disp = t.transform(pos)
    dx, dy = float(np.abs(np.diff(disp[:, 0]))[0]), float(np.abs(np.diff(disp[:, 1]))[0])
    if image._interpolation_stage != "data" and (dx / A.shape[1] < 3 or dy / A.shape[0] < 3):
        return False  # matplotlib colours first, then smooths the colours
    if image.get_interpolation() == "nearest":
        return True
    if image.get_interpolation() not in ("antialiased", "auto"):
        return False
    return ((dx > 3 * A.shape[1] or dx == A.shape[1] or dx == 2 * A.shape[1])
            and (dy > 3 * A.shape[0] or dy == A.shape[0] or dy == 2 * A.shape[0]))


def lean_cells(image: AxesImage) -> AxesImage:
    """``image`` (from ``ax.imshow``) drawn as a :class:`CellImage`: the same pixels, a fraction of the memory."""
    image.__class__ = CellImage
    return image
