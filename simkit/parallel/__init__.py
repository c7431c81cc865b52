"""Many devices: stencil models decomposed over a device mesh (halo exchange), the mesh
helpers that ensembles share, and multi-process start-up.

``simkit.parallel.integrate(models.get("heat_2d"), dt=1e-3, steps=1000)`` splits the grid
over all devices (`mesh_for` picks slabs, pencils or blocks) and returns the same bits as
`simkit.stencil.integrate`.
"""

from .decompose import integrate as integrate
from .decompose import local_grid as local_grid
from .decompose import rollout as rollout
from .decompose import sharded_space as sharded_space
from .halo import halo_pad as halo_pad
from .mesh import field_spec as field_spec
from .mesh import gather as gather
from .mesh import initialize as initialize
from .mesh import member_mesh as member_mesh
from .mesh import mesh_for as mesh_for
from .mesh import mesh_shape_for as mesh_shape_for
from .mesh import place as place
from .mesh import working_counts as working_counts

__all__ = ["field_spec", "gather", "halo_pad", "initialize", "integrate", "local_grid", "member_mesh",
           "mesh_for", "mesh_shape_for", "place", "rollout", "sharded_space", "working_counts"]
