extends "res://tests/test_base.gd"
## Water shared by several players ([member PipeWater.multiplayer_sync]) between separate headless
## Godot processes over ENet on 127.0.0.1. Run without arguments, this script is the server: it
## starts two clients (this script again, with [code]-- --pipewater-client[/code]), and checks that
## each client's water agrees with the server's (largest difference over every cell, in metres,
## printed against issue 49's goal of 1 cm), that a late joiner completes its keyframe, that an
## allowed edit request reaches the server and every client, that a refused one changes nothing,
## that a client without a connection cannot edit, and that packets claiming to be the server's
## from another peer, or a server's packet sent to the server, are refused.
##
## Besides the water's own packets, the processes talk over [code]SceneMultiplayer.send_bytes[/code]
## with packets starting [code]TST[/code] (the water ignores them): the server's exact depths for
## the clients to compare with theirs, commands, and the clients' reports.

const SIDE := 64
## The cell the dam break and the edits are centred on, local metres.
const SPOT := Vector3(-12.0, 0.0, -12.0)
## Budget of the test: loopback has bandwidth to spare, so the agreement shows the protocol's
## latency and corrections rather than the budget's waiting tiles (the bandwidth is printed).
const BUDGET_KBPS := 8000.0
## Volume a client asks for, m³.
const ASKED_M3 := 20.0
## Issue 49's goal for each client's water against the server's.
const GOAL_M := 0.01
## Each client compares its water with the server's of the same frame (it runs the server's
## frames, a few behind): while the dam breaks, each must be within GOAL_M (the same backend on
## every peer gives 0); once the water has come to rest (4 s after the last edit, with damping
## 0.5) within REST_BOUND_M, the same.
const REST_BOUND_M := GOAL_M
## Longest a join may take on loopback (issue 49: 5 s).
const JOIN_LIMIT_S := 5.0
const TAG := "TST"
## Frames of its water a client keeps to compare with a snapshot of the server's.
const KEEP_FRAMES := 240

var _is_client := false
var _port := 0
var _water: PipeWater
var _reports := {}
var _clients := {}
var _pids: Array[int] = []
var _connected := false
var _refusals: Array[String] = []
var _recorded_server_packet := PackedByteArray()
var _last_snapshot := {}
## Largest movement of the server's own water in 2 frames after a snapshot, m.
var _floor := 0.0
var _comparisons := 0
var _within_goal := 0
## Snapshots a client could not compare at the server's frame (before its keyframe, or its
## water ran past the frame while waiting).
var _not_at_frame := 0
## A client's water by the server's frames it has run (frame → depths), the last KEEP_FRAMES.
var _kept := {}
var _kept_max := -1


func _initialize() -> void:
	# The layers run with --fixed-fps 60, which steps as fast as the machine can: each process
	# would run its water at its own pace. Players' games run in real time; so do these.
	Engine.max_fps = 60
	var args := OS.get_cmdline_user_args()
	_is_client = "--pipewater-client" in args
	for a in args:
		if a.begins_with("--port="):
			_port = int(a.trim_prefix("--port="))
	if _is_client:
		_client.call_deferred()
	else:
		_server.call_deferred()


## The same world on every peer: a 64² basin on the CPU backend, still water 0.5 m deep.
func _make_world() -> PipeWater:
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.grid_size = Vector2i(SIDE, SIDE)
	water.cell_size = 1.0
	var heights := PackedFloat32Array()
	heights.resize(SIDE * SIDE)
	for y in SIDE:
		for x in SIDE:
			heights[y * SIDE + x] = 0.002 * float((x - 32) * (x - 32) + (y - 32) * (y - 32)) * 0.1
	water.terrain_heights = heights
	water.initial_water_level = 0.5
	# Waves die down within seconds, so the test also sees the water come to rest.
	water.damping = 0.5
	water.show_mesh = false
	water.detail_waves = false
	water.multiplayer_sync = true
	water.sync_budget_kbps = BUDGET_KBPS
	root.add_child(water)
	return water


func _send(to: int, message: Dictionary) -> void:
	var bytes := TAG.to_utf8_buffer()
	bytes.append_array(var_to_bytes(message))
	get_multiplayer().send_bytes(bytes, to, MultiplayerPeer.TRANSFER_MODE_RELIABLE, 0)


func _on_packet(id: int, bytes: PackedByteArray) -> void:
	if bytes.size() > 3 and bytes.slice(0, 3).get_string_from_utf8() == TAG:
		var message: Dictionary = bytes_to_var(bytes.slice(3))
		if _is_client:
			_client_message(message)
		else:
			_reports[id] = message
	elif bytes.size() > 3 and _recorded_server_packet.is_empty():
		_recorded_server_packet = bytes


func _frames(n: int) -> void:
	for i in n:
		await physics_frame


func _whole() -> Rect2i:
	return Rect2i(Vector2i.ZERO, Vector2i(SIDE, SIDE))


# ---- server ---------------------------------------------------------------------------------


func _server() -> void:
	print(
		"PipeWater multiplayer tests (server process), Godot %s" % Engine.get_version_info().string
	)
	var peer := ENetMultiplayerPeer.new()
	peer.set_bind_ip("127.0.0.1")
	var err := ERR_CANT_CREATE
	for attempt in 10:
		_port = 20000 + randi() % 30000
		err = peer.create_server(_port, 4)
		if err == OK:
			break
	_check(err == OK, "an ENet server listens on 127.0.0.1:%d" % _port)
	if err != OK:
		_finish()
		return
	get_multiplayer().multiplayer_peer = peer
	get_multiplayer().peer_packet.connect(_on_packet)
	get_multiplayer().peer_connected.connect(
		func(id: int) -> void: _clients[id] = Time.get_ticks_msec()
	)
	_water = _make_world()
	_water.allow_client_edits = true
	var requested: Array = []
	_water.edit_requested.connect(
		func(
			peer_id: int, kind: String, _p: Vector3, amount: float, _r: float, accepted: bool
		) -> void:
			requested.append([peer_id, kind, amount, accepted])
	)
	# The game's policy here: water may be added, the ground may not be dug.
	_water.edit_filter = func(
		_peer_id: int, kind: String, _p: Vector3, _a: float, _r: float
	) -> Variant:
		return true if kind != "modify_terrain" else "digging is not allowed here"
	await _frames(5)
	_check(
		_water.get_sync_stats().get("role") == "server",
		"the multiplayer authority serves (role %s)" % _water.get_sync_stats().get("role")
	)

	print("-- a first client joins")
	_pids.append(_spawn_client())
	var first := await _wait_for_clients(1, 20.0)
	_check(first.size() == 1, "client %s connected" % [first])
	if first.size() < 1:
		await _end()
		return
	var a: int = first[0]
	await _wait_for(func() -> bool: return _report(a).get("stats", {}).get("complete", false), 10.0)
	var join_a: float = _report(a).get("stats", {}).get("join_seconds", -1.0)
	_check(
		join_a >= 0.0 and join_a <= JOIN_LIMIT_S,
		"client %d received every tile in %.2f s (limit %.0f s)" % [a, join_a, JOIN_LIMIT_S]
	)
	var offline: Dictionary = _report(a).get("offline_edit", {})
	_check(
		(
			offline.get("returned", 1.0) == 0.0
			and offline.get("total_before", 0.0) == offline.get("total_after", 1.0)
			and String(offline.get("error", "")).contains("not connected")
		),
		(
			"before its connection, a client's add_water is refused with an error and changes nothing (%s)"
			% [offline]
		)
	)

	print(
		"-- a dam breaks: 80 m³ poured at one spot (a 1 m mound), a second client joins while it flows"
	)
	_water.add_water(_water.to_global(SPOT), 80.0, 6.0)
	var moving_worst := {}
	var sent_at_join: int = _water.get_sync_stats().get("clients", {}).get(a, {}).get(
		"bytes_sent", 0
	)
	var t0 := Time.get_ticks_msec()
	await _frames(30)
	for i in 12:
		await _snapshot_round(moving_worst)
		if i == 3:
			_pids.append(_spawn_client())
	await _wait_for_clients(2, 20.0)
	var b := -1
	for id: int in _clients:
		if id != a:
			b = id
	_check(b > 0, "a second client connected while the water moved")
	await _wait_for(func() -> bool: return _report(b).get("stats", {}).get("complete", false), 10.0)
	var join_b: float = _report(b).get("stats", {}).get("join_seconds", -1.0)
	_check(
		join_b >= 0.0 and join_b <= JOIN_LIMIT_S,
		"the late joiner %d received every tile in %.2f s" % [b, join_b]
	)
	var seconds := (Time.get_ticks_msec() - t0) / 1000.0
	var sent_a: int = _water.get_sync_stats()["clients"][a]["bytes_sent"] - sent_at_join
	print(
		(
			"   client %d: %.1f kbit/s over %.1f s of moving water (headers counted; budget %.0f kbit/s)"
			% [a, sent_a * 8.0 / 1000.0 / seconds, seconds, BUDGET_KBPS]
		)
	)
	var sent_b: int = _water.get_sync_stats()["clients"].get(b, {}).get("bytes_sent", 0)
	print(
		(
			"   client %d (joined while it flowed): %.1f kbit/s over %.1f s, its keyframe included"
			% [b, sent_b * 8.0 / 1000.0 / seconds, seconds]
		)
	)
	_check(moving_worst.has(a), "client %d compared its moving water at the server's frames" % a)
	for id: int in moving_worst:
		_check(
			moving_worst[id] <= GOAL_M,
			(
				(
					"client %d's water while the dam breaks, at the server's frame: largest"
					+ " difference over all %d cells %.4f m, within issue 49's %.2f m (the server's"
					+ " own water moved up to %.4f m in 2 frames)"
				)
				% [id, SIDE * SIDE, moving_worst[id], GOAL_M, _floor]
			)
		)

	print("-- an allowed edit: client %d asks for %.0f m³" % [a, ASKED_M3])
	var before_edit: float = _water.get_total_water()
	_send(a, {"cmd": "add_water"})
	await _wait_for(func() -> bool: return requested.size() >= 1, 5.0)
	await _frames(30)
	var added: float = _water.get_total_water() - before_edit
	_check(
		(
			requested.size() >= 1
			and requested[0][0] == a
			and requested[0][1] == "add_water"
			and requested[0][3]
		),
		"the server's edit_requested reports the request accepted (%s)" % [requested]
	)
	_check(
		absf(added - ASKED_M3) < 0.01,
		"the server's water grew by %.4f m³ (%.0f asked)" % [added, ASKED_M3]
	)
	var settled := {}
	for i in 4:
		await _snapshot_round(settled)
	for id: int in [a, b]:
		var r := _report(id)
		_check(
			absf(r.get("total", 0.0) - r.get("server_total", -1.0)) < ASKED_M3 / 5.0,
			(
				"client %d holds %.3f m³ of water, the server %.3f m³ (the edit reached it)"
				% [id, r.get("total", 0.0), r.get("server_total", -1.0)]
			)
		)
	print("-- a refused edit: client %d asks to dig" % b)
	var probe := _water.to_global(Vector3(10.0, 0.0, 10.0))
	var ground_before := _water.get_terrain_height(probe)
	var total_then: float = _water.get_total_water()
	_send(b, {"cmd": "dig", "at": Vector3(10.0, 0.0, 10.0)})
	await _wait_for(func() -> bool: return requested.size() >= 2, 5.0)
	await _frames(30)
	_check(
		(
			requested.size() >= 2
			and requested[1][0] == b
			and requested[1][1] == "modify_terrain"
			and not requested[1][3]
		),
		"the server's edit_requested reports the dig refused (%s)" % [requested]
	)
	_check(
		(
			_water.get_terrain_height(probe) == ground_before
			and absf(_water.get_total_water() - total_then) < 1e-3
		),
		(
			"the server's ground and water are unchanged (%.4f m, %.4f m³)"
			% [ground_before, total_then]
		)
	)
	await _snapshot_round(settled)
	var rb := _report(b)
	_check(
		(
			rb.get("refused", []).size() == 1
			and String(rb["refused"][0]).contains("digging is not allowed")
		),
		"client %d heard why (edit_refused: %s)" % [b, rb.get("refused", [])]
	)
	_check(
		rb.get("ground", 0.0) == ground_before,
		"client %d's ground is unchanged (%.4f m)" % [b, rb.get("ground", 0.0)]
	)

	print(
		"-- hostile packets: a client forwards a server packet to the other client and to the server"
	)
	var refused_before: int = _water.get_sync_stats()["packets_refused"]
	_send(a, {"cmd": "forge", "target": b})
	await _frames(30)
	# The clients report after each snapshot round; on a loaded machine the forged packet and the
	# report that counts it can take a few rounds to arrive.
	for attempt in 10:
		await _snapshot_round(settled)
		var server_refused: bool = _water.get_sync_stats()["packets_refused"] > refused_before
		if server_refused and _report(b).get("stats", {}).get("packets_refused", 0) >= 1:
			break
		await _frames(15)
	_check(
		_water.get_sync_stats()["packets_refused"] > refused_before,
		(
			"the server refused a server's packet from client %d (%d refused)"
			% [a, _water.get_sync_stats()["packets_refused"]]
		)
	)
	_check(
		_report(b).get("stats", {}).get("packets_refused", 0) >= 1,
		(
			"client %d refused a packet claiming to be the server's from peer %d (%d refused)"
			% [b, a, _report(b).get("stats", {}).get("packets_refused", 0)]
		)
	)
	var moving := {}
	for i in 4:
		await _snapshot_round(moving)
	print("-- the water comes to rest")
	await _frames(240)
	var last := {}
	# Three processes on a loaded machine step at uneven rates, and the water takes longer to
	# settle in some: up to six more rests of two seconds, measured afresh each time. A client
	# that catches up runs several of the server's frames in one of its own, and a snapshot of
	# one of those cannot be compared: its last comparison at the server's frame counts.
	for rest in 7:
		var round := {}
		for i in 4:
			await _snapshot_round(round)
		last.merge(round, true)
		var furthest: float = maxf(last.get(a, INF), last.get(b, INF))
		print("   after rest %d: the furthest client is %.4f m from the server" % [rest, furthest])
		if furthest <= REST_BOUND_M:
			break
		await _frames(120)
	for id: int in [a, b]:
		print("   client %d's figures: %s" % [id, _report(id).get("stats", {})])
	print("   the server's figures: %s" % [_water.get_sync_stats()])
	for id: int in [a, b]:
		# A client that never answered counts as infinitely far.
		last[id] = last.get(id, INF)
		_check(
			last[id] <= REST_BOUND_M,
			(
				(
					"client %d's water at rest is within %.2f m of the server's over all %d cells: "
					+ "%.4f m (issue 49's goal %.2f m)"
				)
				% [id, REST_BOUND_M, SIDE * SIDE, last[id], GOAL_M]
			)
		)
	print(
		"   comparisons within issue 49's %.2f m: %d of %d" % [GOAL_M, _within_goal, _comparisons]
	)
	await _end()


## Sends every client the server's exact depths and total; waits for their comparisons and keeps
## each one's largest difference in [param worst].
func _snapshot_round(worst: Dictionary) -> void:
	var depths := _water.get_water_region(_whole())
	# The frames the server's water has run: each client compares once its water has run as
	# many (it runs the server's frames, a few behind).
	var frame: int = _water.get_sync_stats().get("frame", -1)
	var stamp := Time.get_ticks_usec()
	for id: int in _clients:
		_send(
			id,
			{
				"cmd": "snapshot",
				"depths": depths,
				"total": _water.get_total_water(),
				"stamp": stamp,
				"frame": frame
			}
		)
	# How far the server's own water moves in 2 physics frames: what the client's comparison,
	# made a frame or two after the snapshot left, would be off by if it were exact.
	await _frames(2)
	var later := _water.get_water_region(_whole())
	var moved := 0
	for i in depths.size():
		moved = maxi(moved, absi(later[i] - depths[i]))
	_floor = maxf(_floor, moved * _water.get_depth_quantum())
	print(
		(
			"   the server's water moved up to %.4f m in the 2 frames after the snapshot"
			% (moved * _water.get_depth_quantum())
		)
	)
	await _wait_for(
		func() -> bool:
			for id: int in _clients:
				if _report(id).get("stamp", 0) != stamp:
					return false
			return true,
		6.0
	)
	for id: int in _clients:
		var r := _report(id)
		if r.get("stamp", 0) == stamp and not r.get("at_frame", false):
			_not_at_frame += 1
			print(
				(
					"   client %d: not compared at the server's frame %d (its water at frame %d)"
					% [id, frame, r.get("client_frame", -1)]
				)
			)
		elif r.get("stamp", 0) == stamp:
			worst[id] = maxf(worst.get(id, 0.0), r["difference_m"])
			_comparisons += 1
			_within_goal += int(r["difference_m"] <= GOAL_M)
			print(
				(
					"   client %d: largest difference %.4f m over %d cells (at cell %s)"
					% [id, r["difference_m"], SIDE * SIDE, r.get("worst_cell")]
				)
			)
	await _frames(15)


func _report(id: int) -> Dictionary:
	return _reports.get(id, {})


func _spawn_client() -> int:
	var args := [
		"--headless",
		"--path",
		ProjectSettings.globalize_path("res://"),
		"--fixed-fps",
		"60",
		"-s",
		"res://tests/test_multiplayer.gd",
		"--",
		"--pipewater-client",
		"--port=%d" % _port
	]
	return OS.create_process(OS.get_executable_path(), args)


func _wait_for_clients(n: int, seconds: float) -> Array:
	await _wait_for(func() -> bool: return _clients.size() >= n and _reports.size() >= n, seconds)
	return _clients.keys()


func _wait_for(done: Callable, seconds: float) -> void:
	var until := Time.get_ticks_msec() + int(seconds * 1000.0)
	while not done.call() and Time.get_ticks_msec() < until:
		await physics_frame


func _end() -> void:
	for id: int in _clients:
		_send(id, {"cmd": "bye"})
	await _frames(30)
	for pid in _pids:
		if OS.is_process_running(pid):
			OS.kill(pid)
	get_multiplayer().multiplayer_peer = null
	_water.queue_free()
	await process_frame
	_finish()


# ---- client ---------------------------------------------------------------------------------


func _client() -> void:
	_water = _make_world()
	_water.edit_refused.connect(
		func(_request: int, reason: String) -> void: _refusals.append(reason)
	)
	await _frames(3)
	var peer := ENetMultiplayerPeer.new()
	if peer.create_client("127.0.0.1", _port) != OK:
		print("[client] could not connect to 127.0.0.1:%d" % _port)
		quit(1)
		return
	get_multiplayer().multiplayer_peer = peer
	get_multiplayer().peer_packet.connect(_on_packet)
	get_multiplayer().connected_to_server.connect(func() -> void: _connected = true)
	get_multiplayer().server_disconnected.connect(func() -> void: quit(0))
	# Connecting, not yet connected: an edit must be refused and change nothing.
	var before := _water.get_total_water()
	_water.clear_last_error()
	var returned := _water.add_water(_water.to_global(SPOT), 10.0, 2.0)
	await _frames(2)
	var offline := {
		"returned": returned,
		"total_before": before,
		"total_after": _water.get_total_water(),
		"error": _water.get_last_error()
	}
	var until := Time.get_ticks_msec() + 10000
	while not _connected and Time.get_ticks_msec() < until:
		await physics_frame
	print("[client %d] connected" % get_multiplayer().get_unique_id())
	physics_frame.connect(_keep_frame)
	_last_snapshot = {"offline_edit": offline}
	# Until the node goes: the quit command frees it while this loop waits for frames.
	while is_instance_valid(_water):
		await _frames(10)
		_report_to_server({})


## At the start of each physics frame (before the node's): keeps this water by the server's frames
## it has run, for the last KEEP_FRAMES of them.
func _keep_frame() -> void:
	if not is_instance_valid(_water):
		return
	var stats := _water.get_sync_stats()
	var frame: int = stats.get("frame", -1)
	if not stats.get("started", false) or _kept.has(frame):
		return
	_kept[frame] = _water.get_water_region(_whole())
	_kept_max = maxi(_kept_max, frame)
	_kept.erase(frame - KEEP_FRAMES)


func _report_to_server(extra: Dictionary) -> void:
	if not is_instance_valid(_water):
		return
	var message := _last_snapshot.duplicate()
	message.merge(extra, true)
	message["stats"] = _water.get_sync_stats()
	message["total"] = _water.get_total_water()
	message["refused"] = _refusals
	message["ground"] = _water.get_terrain_height(_water.to_global(Vector3(10.0, 0.0, 10.0)))
	_send(1, message)


func _client_message(message: Dictionary) -> void:
	match message.get("cmd", ""):
		"snapshot":
			var server: PackedInt32Array = message["depths"]
			# This water as it was when it had run the server's frames of the snapshot (kept
			# by _keep_frame), or once it has: the processes run at their own rates, so the
			# snapshot may come before or after.
			var frame: int = message.get("frame", -1)
			var waited := 0
			while is_instance_valid(_water) and _kept_max < frame and waited < 600:
				await physics_frame
				waited += 1
			if not is_instance_valid(_water):
				return
			_last_snapshot["at_frame"] = _kept.has(frame)
			_last_snapshot["client_frame"] = _kept_max
			var mine: PackedInt32Array = _kept.get(frame, _water.get_water_region(_whole()))
			var worst := 0
			var at := -1
			for i in mini(server.size(), mine.size()):
				if absi(server[i] - mine[i]) > worst:
					worst = absi(server[i] - mine[i])
					at = i
			_last_snapshot["worst_cell"] = Vector2i(at % SIDE, at / SIDE)
			_last_snapshot["stamp"] = message["stamp"]
			_last_snapshot["difference_m"] = worst * _water.get_depth_quantum()
			_last_snapshot["server_total"] = message["total"]
			_report_to_server({})
		"add_water":
			_water.add_water(_water.to_global(SPOT), ASKED_M3, 4.0)
		"dig":
			_water.modify_terrain(_water.to_global(message["at"]), -1.0, 3.0)
		"forge":
			# A packet the server sent this client, sent on as if it were the server's.
			get_multiplayer().send_bytes(
				_recorded_server_packet,
				message["target"],
				MultiplayerPeer.TRANSFER_MODE_RELIABLE,
				0
			)
			get_multiplayer().send_bytes(
				_recorded_server_packet, 1, MultiplayerPeer.TRANSFER_MODE_RELIABLE, 0
			)
		"bye":
			get_multiplayer().multiplayer_peer = null
			_water.queue_free()
			# The node lets go of the multiplayer's signals as it leaves; let that finish.
			await _frames(3)
			quit(0)
