"""The bundled sample captures and their expected files, installed with nrsack as package data."""
