"""Ichor organs: the stomach, absorption and border workers and their runtime."""
