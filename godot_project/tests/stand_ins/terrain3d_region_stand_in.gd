extends Resource
## A stand-in for Terrain3DRegion (Terrain3D 1.0): its location in region units and its maps.

const TYPE_HEIGHT := 0
const TYPE_CONTROL := 1
const TYPE_COLOR := 2

## Region location: (0, 0) covers vertices 0 ..= region_size − 1 on both axes.
var location := Vector2i.ZERO
## Heights, [code]FORMAT_RF[/code].
var height_map: Image
## Control bits as the 32 bits of each [code]FORMAT_RF[/code] pixel; bit 2 is a hole.
var control_map: Image
var region_size: int = 64
var vertex_spacing: float = 1.0
var edited := false


func get_map(map_type: int) -> Image:
	return height_map if map_type == TYPE_HEIGHT else control_map
