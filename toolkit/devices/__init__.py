"""Devices: the inventory and the transports that reach them (see base.py for the contract)."""

from edgedeploy.devices.base import CommandResult, Device, Transport

__all__ = ["CommandResult", "Device", "Transport"]
