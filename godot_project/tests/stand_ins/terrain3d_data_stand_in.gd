extends Object
## A stand-in for Terrain3DData (Terrain3D 1.0), from its class documentation; checked by hand
## against the real 1.1.0-dev (commit fc7a744): same methods, signals and map layout.

signal maps_edited(edited_area: AABB)
signal maps_changed

const RegionStandIn := preload("res://tests/stand_ins/terrain3d_region_stand_in.gd")
const REGION_MAP_SIZE := 32
const HOLE_BIT := 1 << 2

var region_size: int
var vertex_spacing: float
## update_maps calls, and regions they updated (for the tests).
var updates := 0
var regions_updated := 0
var _regions: Array = []


func _init(size: int, spacing: float) -> void:
	region_size = size
	vertex_spacing = spacing


## Adds a flat region at [param location] with ground at [param height].
func add_flat_region(location: Vector2i, height: float) -> void:
	var region := RegionStandIn.new()
	region.location = location
	region.region_size = region_size
	region.vertex_spacing = vertex_spacing
	region.height_map = Image.create(region_size, region_size, false, Image.FORMAT_RF)
	region.height_map.fill(Color(height, 0, 0))
	region.control_map = Image.create(region_size, region_size, false, Image.FORMAT_RF)
	_regions.append(region)


## Typed, as the real Terrain3D's TypedArray<Terrain3DRegion> (an untyped Array here hid that a
## typed array does not convert to an untyped one in Rust).
func get_regions_active(_copy := false, _deep := false) -> Array[Resource]:
	var active: Array[Resource] = []
	active.assign(_regions)
	return active


func get_maps(map_type: int) -> Array[Image]:
	var maps: Array[Image] = []
	maps.assign(_regions.map(func(r: Resource) -> Image: return r.get_map(map_type)))
	return maps


## 32 × 32 region ids + 1 (0: none), locations −16 ..= 15, as get_region_map_index lays them.
func get_region_map() -> PackedInt32Array:
	var map := PackedInt32Array()
	map.resize(REGION_MAP_SIZE * REGION_MAP_SIZE)
	for i in _regions.size():
		var l: Vector2i = _regions[i].location
		map[(l.y + 16) * REGION_MAP_SIZE + l.x + 16] = i + 1
	return map


func _region_and_pixel(global_position: Vector3) -> Array:
	var u := floori(global_position.x / vertex_spacing + 0.0001)
	var v := floori(global_position.z / vertex_spacing + 0.0001)
	var location := Vector2i(floori(float(u) / region_size), floori(float(v) / region_size))
	for region: Resource in _regions:
		if region.location == location:
			return [region, Vector2i(u - location.x * region_size, v - location.y * region_size)]
	return []


## The height at a vertex (no interpolation in this stand-in); NaN in a hole or outside.
func get_height(global_position: Vector3) -> float:
	var at := _region_and_pixel(global_position)
	if at.is_empty() or _is_hole(at[0], at[1]):
		return NAN
	return at[0].height_map.get_pixelv(at[1]).r


## The region holding [param global_position], or null.
func get_regionp(global_position: Vector3) -> Resource:
	var at := _region_and_pixel(global_position)
	return null if at.is_empty() else at[0]


func set_height(global_position: Vector3, height: float) -> void:
	var at := _region_and_pixel(global_position)
	if not at.is_empty():
		at[0].height_map.set_pixelv(at[1], Color(height, 0, 0))
		at[0].edited = true


func set_control_hole(global_position: Vector3, hole: bool) -> void:
	var at := _region_and_pixel(global_position)
	if at.is_empty():
		return
	var bits := PackedFloat32Array([at[0].control_map.get_pixelv(at[1]).r]).to_byte_array()
	var word := bits.decode_u32(0)
	word = (word | HOLE_BIT) if hole else (word & ~HOLE_BIT)
	bits.encode_u32(0, word)
	at[0].control_map.set_pixelv(at[1], Color(bits.decode_float(0), 0, 0))


func _is_hole(region: Resource, pixel: Vector2i) -> bool:
	var bits := PackedFloat32Array([region.control_map.get_pixelv(pixel).r]).to_byte_array()
	return bits.decode_u32(0) & HOLE_BIT != 0


## Counts the calls, and the regions marked edited when [param all_regions] is false.
func update_maps(_map_type := 3, all_regions := true, _generate_mipmaps := false) -> void:
	updates += 1
	for region: Resource in _regions:
		if all_regions or region.edited:
			regions_updated += 1
	maps_changed.emit()
