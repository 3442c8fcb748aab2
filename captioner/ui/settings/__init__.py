"""The settings dialog: one tab per topic; validation rules in :mod:`.validation`."""
