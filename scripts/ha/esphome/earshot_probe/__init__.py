"""Earshot test probe: what Home Assistant's own Bluetooth stack sees.

A custom integration for scripts/ha-esphome.sh, loaded from configuration.yaml:

    earshot_probe:
      out: DIR

Every second it appends a snapshot to DIR/snapshots.jsonl (and replaces
DIR/snapshot.json): the scanner count (bluetooth.async_scanner_count with
connectable=False), the scanners (name, source, type), every discovered
device (bluetooth.async_discovered_service_info with connectable=False:
address, address type, rssi, source, manufacturer data, service UUIDs), the
esphome config entries (state, connected, the device info the node sent),
their devices in the device registry and the ibeacon entities. Changes it
notices in between (checked every 0.2 s) and the first advertisement of each
address (a Bluetooth callback) go to DIR/events.jsonl with their time.

When DIR/add-esphome.json appears ({"host", "port", "noise_psk",
"wrong_psk"?}) it adds the node the way a user does: the esphome config
flow's user step with host and port, then the encryption key step (with the
wrong key first, if given: the form must come back with an error), then the
key; each step's result is an event. When DIR/reload-esphome appears, the
esphome entries are reloaded (HA disconnects from the node and connects
again). Nothing here talks to the network itself.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import voluptuous as vol

from homeassistant.components import bluetooth
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.setup import async_setup_component

DOMAIN = "earshot_probe"
_LOGGER = logging.getLogger(__name__)

CONFIG_SCHEMA = vol.Schema(
    {DOMAIN: vol.Schema({vol.Required("out"): str, vol.Optional("scanner_area"): str})},
    extra=vol.ALLOW_EXTRA,
)


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def _replace(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _read_request(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        request = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # not written completely yet
    path.rename(path.with_suffix(".taken"))
    return request


def _take(path: Path) -> bool:
    if not path.exists():
        return False
    path.unlink()
    return True


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "value"):  # enums
        return _jsonable(value.value)
    return str(value)


class Probe:
    """Collects what HA's Bluetooth and esphome integrations hold."""

    def __init__(self, hass: HomeAssistant, out: Path, scanner_area: str | None = None) -> None:
        self.hass = hass
        self.out = out
        self.scanner_area = scanner_area
        self.area_given: set[str] = set()
        self.first_seen: set[str] = set()
        self.last_quick: dict[str, Any] = {}
        self.flow_busy = False
        self.scanner_objects: dict[str, Any] = {}

    # --- output -------------------------------------------------------------
    def event(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"t": time.time(), "event": kind, **_jsonable(fields)})
        self.hass.async_add_executor_job(_append, self.out / "events.jsonl", line)

    # --- what HA holds --------------------------------------------------------
    def esphome_entries(self) -> list[dict[str, Any]]:
        hass = self.hass
        entries = []
        for entry in hass.config_entries.async_entries("esphome"):
            item: dict[str, Any] = {
                "entry_id": entry.entry_id,
                "title": entry.title,
                "state": entry.state.value,
                "reason": entry.reason,
                "unique_id": entry.unique_id,
                "source": entry.source,
                "host": entry.data.get("host"),
                "port": entry.data.get("port"),
                "device_name": entry.data.get("device_name"),
                "has_noise_psk": bool(entry.data.get("noise_psk")),
                "connected": False,
            }
            try:
                from homeassistant.components.esphome.domain_data import DomainData

                data = DomainData.get(hass).get_entry_data(entry)
            except Exception:  # noqa: BLE001 - not set up (yet)
                data = None
            if data is not None:
                item["connected"] = bool(data.available)
                if data.api_version is not None:
                    item["api_version"] = f"{data.api_version.major}.{data.api_version.minor}"
                info = data.device_info
                if info is not None:
                    item["device_info"] = {
                        k: _jsonable(getattr(info, k, None))
                        for k in (
                            "name",
                            "friendly_name",
                            "mac_address",
                            "bluetooth_mac_address",
                            "esphome_version",
                            "compilation_time",
                            "model",
                            "manufacturer",
                            "project_name",
                            "project_version",
                            "uses_password",
                            "has_deep_sleep",
                            "bluetooth_proxy_feature_flags",
                            "legacy_bluetooth_proxy_version",
                            "voice_assistant_version",
                            "webserver_port",
                        )
                    }
                    if data.api_version is not None:
                        item["device_info"]["feature_flags_compat"] = int(
                            info.bluetooth_proxy_feature_flags_compat(data.api_version)
                        )
            entries.append(item)
        return entries

    def registry_devices(self) -> list[dict[str, Any]]:
        registry = dr.async_get(self.hass)
        devices = []
        for entry in self.hass.config_entries.async_entries("esphome"):
            for device in dr.async_entries_for_config_entry(registry, entry.entry_id):
                devices.append(
                    {
                        "name": device.name,
                        "manufacturer": device.manufacturer,
                        "model": device.model,
                        "sw_version": device.sw_version,
                        "hw_version": device.hw_version,
                        "connections": sorted(list(c) for c in device.connections),
                    }
                )
        return devices

    def ibeacon_entities(self, platform: str = "ibeacon") -> list[dict[str, Any]]:
        registry = er.async_get(self.hass)
        entities = []
        for entity in registry.entities.values():
            if entity.platform != platform:
                continue
            state = self.hass.states.get(entity.entity_id)
            entities.append(
                {
                    "entity_id": entity.entity_id,
                    "unique_id": entity.unique_id,
                    "state": state.state if state else None,
                    "source": state.attributes.get("source") if state else None,
                }
            )
        return entities

    async def scanners(self) -> list[dict[str, Any]]:
        manager = bluetooth.api._get_manager(self.hass)  # noqa: SLF001
        try:
            diagnostics = await manager.async_diagnostics()
        except Exception as err:  # noqa: BLE001
            return [{"error": repr(err)}]
        return [
            {
                k: _jsonable(s.get(k))
                for k in ("name", "source", "type", "scanning", "connectable",
                          "current_mode", "requested_mode")
                if k in s
            }
            for s in diagnostics.get("scanners", [])
        ]

    def devices(self) -> list[dict[str, Any]]:
        devices = []
        for info in bluetooth.async_discovered_service_info(self.hass, connectable=False):
            details = info.device.details if info.device is not None else None
            devices.append(
                {
                    "address": info.address,
                    "address_type": details.get("address_type")
                    if isinstance(details, dict)
                    else None,
                    "rssi": info.rssi,
                    "source": info.source,
                    "name": info.name,
                    "connectable": info.connectable,
                    "manufacturer_data": _jsonable(dict(info.manufacturer_data)),
                    "service_uuids": list(info.service_uuids),
                    "service_data": _jsonable(dict(info.service_data)),
                    "time": info.time,
                }
            )
        return devices

    # --- loops ----------------------------------------------------------------
    async def snapshot(self, _now: Any = None) -> None:
        snap = {
            "t": time.time(),
            "scanner_count": bluetooth.async_scanner_count(self.hass, connectable=False),
            "connectable_scanner_count": bluetooth.async_scanner_count(
                self.hass, connectable=True
            ),
            "scanners": await self.scanners(),
            "esphome": self.esphome_entries(),
            "registry": self.registry_devices(),
            "ibeacon": self.ibeacon_entities(),
            "private_ble_device": self.ibeacon_entities("private_ble_device"),
            "bermuda": self.ibeacon_entities("bermuda"),
            "devices": self.devices(),
        }
        line = json.dumps(snap, sort_keys=True)
        await self.hass.async_add_executor_job(_append, self.out / "snapshots.jsonl", line)
        await self.hass.async_add_executor_job(_replace, self.out / "snapshot.json", line)

    async def quick(self, _now: Any = None) -> None:
        """Note changes as they happen (every 0.2 s) and take requests."""
        entries = self.esphome_entries()
        now = {
            "scanner_count": bluetooth.async_scanner_count(self.hass, connectable=False),
            "entries": [(e["entry_id"], e["state"], e["connected"]) for e in entries],
        }
        if now["scanner_count"] != self.last_quick.get("scanner_count"):
            self.event(
                "scanner_count",
                count=now["scanner_count"],
                scanners=await self.scanners(),
            )
        if now["entries"] != self.last_quick.get("entries"):
            self.event("esphome_entries", entries=entries)
        # The scanner object of each node: a reconnect makes a new one, even
        # when the count never shows the moment without it.
        for e in entries:
            info = e.get("device_info") or {}
            source = info.get("bluetooth_mac_address") or info.get("mac_address")
            if not source:
                continue
            scanner = bluetooth.async_scanner_by_source(self.hass, source)
            if scanner is not None and self.scanner_area and source not in self.area_given:
                self.give_area(source)
            known = self.scanner_objects.get(source)
            if known is None or known[0] is not scanner:
                # the object itself is kept, so a new one is never taken for it
                generation = (known[1] + 1) if known else 1
                self.scanner_objects[source] = (scanner, generation)
                self.event(
                    "scanner_object",
                    source=source,
                    present=scanner is not None,
                    obj=generation if scanner is not None else None,
                )
        self.last_quick = now
        if await self.hass.async_add_executor_job(_take, self.out / "reload-esphome"):
            self.hass.async_create_task(self.reload_esphome())
        mode = await self.hass.async_add_executor_job(
            _read_request, self.out / "scanning-mode.json"
        )
        if mode is not None:
            self.hass.async_create_task(self.set_scanning_mode(mode["mode"]))
        if not self.flow_busy:
            request = await self.hass.async_add_executor_job(
                _read_request, self.out / "add-esphome.json"
            )
            if request is not None:
                self.flow_busy = True
                self.hass.async_create_task(self.add_esphome(request))

    def give_area(self, source: str) -> None:
        """Put the scanner's devices in an area, as a user does on the device
        page (Bermuda needs it: its issue #455): the device HA's bluetooth
        integration made for the scanner, and the esphome device."""
        from homeassistant.helpers import area_registry as ar

        areas = ar.async_get(self.hass)
        area = areas.async_get_area_by_name(self.scanner_area) or areas.async_create(
            self.scanner_area
        )
        registry = dr.async_get(self.hass)
        given = []
        for connection in (("bluetooth", source.upper()), (dr.CONNECTION_NETWORK_MAC, source.lower())):
            device = registry.async_get_device(connections={connection})
            if device is not None:
                registry.async_update_device(device.id, area_id=area.id)
                given.append({"name": device.name, "connection": list(connection)})
        if given:
            self.area_given.add(source)
            self.event("scanner_area", area=area.name, area_id=area.id, devices=given)

    @callback
    def on_advertisement(
        self, info: bluetooth.BluetoothServiceInfoBleak, change: Any
    ) -> None:
        if info.address in self.first_seen:
            return
        self.first_seen.add(info.address)
        details = info.device.details if info.device is not None else None
        self.event(
            "first_seen",
            address=info.address,
            rssi=info.rssi,
            source=info.source,
            address_type=details.get("address_type") if isinstance(details, dict) else None,
            manufacturer_data=dict(info.manufacturer_data),
            service_uuids=list(info.service_uuids),
        )

    async def reload_esphome(self) -> None:
        """Reload the esphome entries: HA disconnects (DisconnectRequest) and connects again."""
        for entry in self.hass.config_entries.async_entries("esphome"):
            self.event("reload_start", entry_id=entry.entry_id)
            try:
                ok = await self.hass.config_entries.async_reload(entry.entry_id)
                self.event("reload_done", entry_id=entry.entry_id, ok=ok, state=entry.state.value)
            except Exception as err:  # noqa: BLE001
                _LOGGER.exception("earshot_probe: reload failed")
                self.event("reload_error", error=repr(err))

    async def set_scanning_mode(self, mode: str) -> None:
        """The esphome entry's options flow, as a user sets the Bluetooth
        scanning mode (HA 2026.4 and later: the proxy offers flag 64); HA
        reloads the entry and asks the proxy for the mode."""
        flows = self.hass.config_entries.options
        for entry in self.hass.config_entries.async_entries("esphome"):
            try:
                result = await flows.async_init(entry.entry_id)
                # The form's fields as the user leaves them (HA's defaults),
                # the scanning mode chosen.
                fields = {
                    "allow_service_calls": entry.options.get("allow_service_calls", False),
                    "subscribe_logs": entry.options.get("subscribe_logs", False),
                    "bluetooth_scanning_mode": mode,
                }
                result = await flows.async_configure(result["flow_id"], fields)
                self.event("scanning_mode", mode=mode, result=_flow_summary(result),
                           options=dict(entry.options))
            except Exception as err:  # noqa: BLE001
                _LOGGER.exception("earshot_probe: options flow failed")
                self.event("scanning_mode_error", error=repr(err))

    async def add_esphome(self, request: dict[str, Any]) -> None:
        """The esphome config flow, as a user goes through it."""
        flows = self.hass.config_entries.flow
        try:
            self.event("flow_start", host=request["host"], port=request["port"])
            result = await flows.async_init("esphome", context={"source": "user"})
            self.event("flow_step", step="init", result=_flow_summary(result))
            result = await flows.async_configure(
                result["flow_id"], {"host": request["host"], "port": request["port"]}
            )
            self.event("flow_step", step="user", result=_flow_summary(result))
            if (
                result.get("type") == "form"
                and result.get("step_id") == "encryption_key"
                and request.get("wrong_psk")
            ):
                result = await flows.async_configure(
                    result["flow_id"], {"noise_psk": request["wrong_psk"]}
                )
                self.event("flow_step", step="wrong_key", result=_flow_summary(result))
            if result.get("type") == "form" and result.get("step_id") == "encryption_key":
                result = await flows.async_configure(
                    result["flow_id"], {"noise_psk": request["noise_psk"]}
                )
                self.event("flow_step", step="encryption_key", result=_flow_summary(result))
            self.event("flow_done", result=_flow_summary(result))
        except Exception as err:  # noqa: BLE001
            _LOGGER.exception("earshot_probe: esphome flow failed")
            self.event("flow_error", error=repr(err))


def _flow_summary(result: Any) -> dict[str, Any]:
    keys = ("type", "step_id", "errors", "reason", "title", "description_placeholders")
    summary = {k: _jsonable(result.get(k)) for k in keys if result.get(k) is not None}
    if (entry := result.get("result")) is not None and hasattr(entry, "entry_id"):
        summary["entry"] = {
            "entry_id": entry.entry_id,
            "unique_id": entry.unique_id,
            "title": entry.title,
            "data_keys": sorted(entry.data),
            "device_name": entry.data.get("device_name"),
        }
    return summary


async def async_setup(hass: HomeAssistant, config: dict[str, Any]) -> bool:
    """Set up the probe."""
    out = Path(config[DOMAIN]["out"])
    await hass.async_add_executor_job(lambda: out.mkdir(parents=True, exist_ok=True))
    probe = Probe(hass, out, config[DOMAIN].get("scanner_area"))
    # esphome is loaded up front (as a configured install has it), so adding
    # the node later measures the node, not the loading of the integration.
    ok = await async_setup_component(hass, "esphome", config)
    probe.event("setup", esphome_loaded=ok, bluetooth_loaded="bluetooth" in hass.config.components)
    bluetooth.async_register_callback(
        hass,
        probe.on_advertisement,
        bluetooth.BluetoothCallbackMatcher(connectable=False),
        bluetooth.BluetoothScanningMode.PASSIVE,
    )
    async_track_time_interval(hass, probe.snapshot, timedelta(seconds=1), cancel_on_shutdown=True)
    async_track_time_interval(hass, probe.quick, timedelta(seconds=0.2), cancel_on_shutdown=True)
    return True
