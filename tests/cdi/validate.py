# tests/cdi/validate.py SCHEMA_DIR SPEC... - validates CDI specs (JSON or
# YAML) against the vendored CDI JSON schema (schema.json + defs.json), with
# Debian's python3-jsonschema. Exit 0 if all are valid; 1 with the reasons.
import json
import pathlib
import sys

import jsonschema
import yaml

schema_dir = pathlib.Path(sys.argv[1]).resolve()
schema = json.loads((schema_dir / "schema.json").read_text())
defs = json.loads((schema_dir / "defs.json").read_text())
resolver = jsonschema.RefResolver(
    base_uri=schema_dir.as_uri() + "/", referrer=schema,
    store={(schema_dir / "defs.json").as_uri(): defs})
validator = jsonschema.Draft7Validator(schema, resolver=resolver)
bad = 0
for path in sys.argv[2:]:
    text = pathlib.Path(path).read_text()
    doc = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    errors = list(validator.iter_errors(doc))
    for e in errors:
        print(f"{path}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    bad += bool(errors)
sys.exit(1 if bad else 0)
