extends Resource
## A stand-in for HTerrainData (Zylann/godot_heightmap_plugin 1.7, hterrain_data.gd): one
## [code]FORMAT_RF[/code] height map of resolution² pixels, one a vertex, read with
## [code]get_all_heights()[/code] and [code]get_heights_region()[/code], and
## [code]region_changed(rect, channel, index)[/code] emitted by
## [code]notify_region_change()[/code]; one [code]FORMAT_RGBA8[/code] color map whose alpha
## below 0.5 is a hole (what HTerrain's Holes brush paints and its shaders discard), checked
## against the real addon (1.8.1 dev, commit f490f77).

signal region_changed(rect: Rect2i, channel: int, index: int)

const CHANNEL_HEIGHT := 0
const CHANNEL_SPLAT := 2
const CHANNEL_COLOR := 3

var _height: Image
var _color: Image


func _init(resolution: int, height: float) -> void:
	_height = Image.create(resolution, resolution, false, Image.FORMAT_RF)
	_height.fill(Color(height, 0, 0))
	_color = Image.create(resolution, resolution, false, Image.FORMAT_RGBA8)
	_color.fill(Color(1, 1, 1, 1))


func get_resolution() -> int:
	return _height.get_width()


func get_map_count(map_type: int) -> int:
	return 1 if map_type == CHANNEL_HEIGHT or map_type == CHANNEL_COLOR else 0


func get_image(map_type: int, _index := 0) -> Image:
	match map_type:
		CHANNEL_HEIGHT:
			return _height
		CHANNEL_COLOR:
			return _color
	return null


func get_all_heights() -> PackedFloat32Array:
	return _height.get_data().to_float32_array()


func get_heights_region(x0: int, y0: int, w: int, h: int) -> PackedFloat32Array:
	var heights := PackedFloat32Array()
	for y in range(y0, y0 + h):
		for x in range(x0, x0 + w):
			heights.append(_height.get_pixel(x, y).r)
	return heights


func notify_region_change(p_rect: Rect2i, p_map_type: int, p_index := 0,
		_p_upload_to_texture := true, _p_update_vertical_bounds := true,
		_p_force_some_occupancy := false) -> void:
	region_changed.emit(p_rect, p_map_type, p_index)
	changed.emit()
