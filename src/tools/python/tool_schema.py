"""
A tool's JSON schema from its Python source, without running it, as Letta derives it
(letta/functions/functions.py: derive_openai_json_schema; schema_generator.py: generate_schema).

Standard library only. Reads {"source": ..., "name": optional} as JSON on stdin and writes
{"schema": {...}} or {"error": "..."} (Letta's message) as JSON on stdout; with "mode": "signature",
{"signature": {"name", "docstring"}} of the last function instead.

Letta rebuilds the function's signature from the AST with real `typing` objects, then maps them to
JSON schema types; this does the same, so its quirks come along: an annotation it cannot rebuild
becomes a string, which then "has no corresponding JSON schema type". Pydantic is not available here:
BaseModel classes of the file are described by what pydantic's `model_json_schema()` would give for
the fields Letta keeps (annotations, `Field(..., description=...)`, literal defaults).
"""
import ast
import inspect
import json
import re
import sys
import typing
from typing import Dict, List, Literal, Optional, Union, get_args, get_origin

RESERVED = ("self", "agent_state")
TYPE_MAP = {int: "integer", str: "string", bool: "boolean", float: "number", None: "null"}
TYPE_MAP_TEXT = "{<class 'int'>: 'integer', <class 'str'>: 'string', <class 'bool'>: 'boolean', <class 'float'>: 'number', None: 'null'}"


class ToolSchemaError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Pydantic-like models rebuilt from the AST


class ModelBase:
    """A BaseModel subclass of the source, as a class (typing accepts it in List[...]) with its fields."""

    fields = []  # (name, annotation, has_default, default, description)


def new_model(name):
    # Letta builds these with type() inside letta.functions.functions: error texts name that module.
    return type(name, (ModelBase,), {"fields": [], "__module__": "letta.functions.functions"})


def is_model(value):
    return inspect.isclass(value) and issubclass(value, ModelBase)


def title_of(field_name):
    return " ".join(part.capitalize() for part in field_name.split("_"))


def pydantic_property(annotation, models_seen):
    """The JSON schema pydantic v2 generates for a field annotation (before Letta cleans it)."""
    if is_model(annotation):
        models_seen[annotation.__name__] = annotation
        return {"$ref": f"#/$defs/{annotation.__name__}"}
    origin = get_origin(annotation)
    if origin is Union:
        return {"anyOf": [pydantic_property(arg, models_seen) for arg in get_args(annotation)]}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in (list, List) or origin is list:
        args = get_args(annotation)
        return {"items": pydantic_property(args[0], models_seen), "type": "array"} if args else {"items": {}, "type": "array"}
    if annotation in (dict, Dict) or origin is dict:
        return {"type": "object"}
    if origin is Literal:
        values = list(get_args(annotation))
        return {"enum": values, "type": "string"}
    if annotation in TYPE_MAP and annotation is not None:
        return {"type": TYPE_MAP[annotation]}
    raise ToolSchemaError(f"Unable to generate pydantic-core schema for {annotation!r}")


def model_json_schema(model):
    """What pydantic's model_json_schema() gives for a rebuilt model: properties, required, $defs."""
    defs = {}

    def describe(m):
        properties, required = {}, []
        for name, annotation, has_default, default, description in m.fields:
            prop = pydantic_property(annotation, seen)
            if "$ref" not in prop:
                prop = {**prop, "title": title_of(name)}
            if description is not None:
                prop["description"] = description
            if has_default:
                prop["default"] = default
            else:
                required.append(name)
            # pydantic sorts a property's keys (not the properties themselves)
            properties[name] = dict(sorted(prop.items()))
        schema = {"properties": properties, "title": m.__name__, "type": "object"}
        if required:
            schema["required"] = required
        return schema

    seen = {}
    top = describe(model)
    while any(name not in defs for name in seen):
        for name, m in list(seen.items()):
            if name not in defs:
                defs[name] = describe(m)
    if defs:
        top["$defs"] = defs
    return top


def pydantic_model_to_json_schema(model):
    """Letta's cleaning of model_json_schema(): inline $refs, keep type and description only."""
    schema = model_json_schema(model)

    def resolve_ref(ref):
        name = ref.split("/")[-1]
        return schema["$defs"][name]

    def clean_property(prop):
        if "description" not in prop:
            raise ValueError(f"Property {prop} lacks a 'description' key")
        if "$ref" in prop:
            return {"type": "object", **clean_schema(resolve_ref(prop["$ref"])), "description": prop["description"]}
        if "anyOf" in prop:
            non_null = [t for t in prop["anyOf"] if t.get("type") != "null"]
            if len(non_null) == 1:
                return {"type": non_null[0]["type"], "description": prop["description"]}
            raise ValueError(f"Complex anyOf patterns are not supported: {prop}")
        return {"type": prop["type"], "description": prop["description"]}

    def clean_schema(part):
        if "$ref" in part:
            part = resolve_ref(part["$ref"])
        if "type" not in part:
            raise ValueError(f"Schema part lacks a 'type' key: {part}")
        if part["type"] == "array":
            items = part["items"]
            if "$ref" in items:
                items = resolve_ref(items["$ref"])
            return {"type": "array", "items": clean_schema(items), "description": part.get("description", "")}
        if part["type"] == "object":
            if "properties" not in part:
                raise ValueError(f"Object schema lacks 'properties' key: {part}")
            properties = {}
            for name, prop in part["properties"].items():
                if "items" in prop:
                    if "description" not in prop:
                        raise ValueError(f"Property {prop} lacks a 'description' key")
                    properties[name] = {"type": "array", "items": clean_schema(prop["items"]), "description": prop["description"]}
                else:
                    properties[name] = clean_property(prop)
            cleaned = {"type": "object", "properties": properties, "required": part.get("required", [])}
            if "description" in part:
                cleaned["description"] = part["description"]
            return cleaned
        return clean_property(part)

    return clean_schema(schema)


# ---------------------------------------------------------------------------------------------
# Rebuilding the signature from the AST (Letta's _parse_type_annotation and friends)


def imports_map_of(tree):
    names = {
        "Optional": Optional,
        "List": List,
        "Dict": Dict,
        "Literal": Literal,
        "str": str,
        "int": int,
        "bool": bool,
        "float": float,
        "list": list,
        "dict": dict,
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "pydantic":
            for alias in node.names:
                if alias.name in ("BaseModel", "Field"):
                    names[alias.name] = alias.name
    return names


def parse_annotation(node, names):
    if node is None:
        return inspect.Parameter.empty
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Subscript):
        value_name = node.value.id if isinstance(node.value, ast.Name) else ast.dump(node.value)
        origin = names.get(value_name, value_name)
        inner = parse_annotation(node.slice, names)
        if hasattr(origin, "__getitem__") and not isinstance(origin, str):
            try:
                return origin[inner]
            except (TypeError, AttributeError):
                pass
        return f"{origin}[{inner}]"
    return ast.unparse(node)


def literal_default(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def models_of(tree, names):
    """BaseModel subclasses of the file, when `from pydantic import BaseModel` is there."""
    if "BaseModel" not in names:
        return {}
    models = {}
    classes = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "BaseModel" for b in node.bases)
    ]
    for node in classes:
        models[node.name] = new_model(node.name)
    for node in classes:
        model = models[node.name]
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            annotation = parse_annotation(stmt.annotation, {**names, **models})
            has_default, default, description = False, None, None
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Field" and "Field" in names:
                for keyword in value.keywords:
                    if keyword.arg == "description" and isinstance(keyword.value, ast.Constant):
                        description = keyword.value.value
                if value.args:
                    ok, given = literal_default(value.args[0])
                    if ok and given is not Ellipsis:
                        has_default, default = True, given
            elif value is not None:
                has_default, default = literal_default(value)
            model.fields.append((stmt.target.id, annotation, has_default, default, description))
    return models


# ---------------------------------------------------------------------------------------------
# Google docstrings, as docstring_parser reads them


SECTION_TITLES = [
    "Arguments", "Args", "Parameters", "Params", "Raises", "Exceptions", "Except", "Attributes",
    "Example", "Examples", "Returns", "Yields",
]
PARAM_SECTIONS = ("Arguments", "Args", "Parameters", "Params")
TITLES_RE = re.compile("^(" + "|".join(f"({t})" for t in SECTION_TITLES) + "):[ \t\r\f\v]*$", flags=re.M)
TYPED_ARG_RE = re.compile(r"\s*(.+?)\s*\(\s*(.*[^\s]+)\s*\)")


class Docstring:
    def __init__(self, text):
        text = inspect.cleandoc(text)
        match = TITLES_RE.search(text)
        description, sections = (text[: match.start()], text[match.start():]) if match else (text, "")
        parts = description.split("\n", 1)
        self.short = parts[0] or None
        self.long = (parts[1].strip() or None) if len(parts) > 1 else None
        self.params = {}
        self._read_sections(sections)

    def _read_sections(self, text):
        matches = list(TITLES_RE.finditer(text))
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            title = match.group(1)
            if title in PARAM_SECTIONS:
                self._read_params(text[match.end(): end])

    def _read_params(self, chunk):
        chunk = chunk.strip("\n")
        if not chunk:
            return
        indent = re.match(r"^\s*", chunk).group(0)
        starts = [m.start() for m in re.finditer("^" + re.escape(indent) + r"(?=\S)", chunk, flags=re.M)]
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(chunk)
            part = inspect.cleandoc(chunk[start:end].strip("\n"))
            if ":" not in part:
                continue
            before, desc = part.split(":", 1)
            if desc:
                desc = desc[1:] if desc[0] == " " else desc
                if "\n" in desc:
                    first, rest = desc.split("\n", 1)
                    desc = first + "\n" + inspect.cleandoc(rest)
                desc = desc.strip("\n")
            typed = TYPED_ARG_RE.match(before)
            name = typed.group(1) if typed else before
            self.params.setdefault(name, desc or None)


def examples_section(docstring):
    """Letta's extract_examples_section: the raw lines from `Examples:` to the next section title."""
    if not docstring or "Examples:" not in docstring:
        return None
    lines, found = [], False
    for line in docstring.strip().splitlines():
        stripped = line.strip()
        if not found and stripped.startswith("Examples:"):
            found = True
            lines.append(line)
            continue
        if found:
            if stripped and not line.startswith(" ") and stripped.endswith(":"):
                break
            lines.append(line)
    return "\n".join(lines).strip() if lines else None


# ---------------------------------------------------------------------------------------------
# Letta's type mapping and schema


def is_optional(annotation):
    return get_origin(annotation) is Union and type(None) in get_args(annotation)


def json_type(annotation):
    if is_optional(annotation):
        args = get_args(annotation)
        if len(args) - 1 != 1:
            raise AssertionError(f"Optional type must have exactly one type argument, but got {annotation}")
        return json_type(args[0])
    if get_origin(annotation) is Union:
        raise NotImplementedError("General Union types are not yet supported")
    origin = get_origin(annotation)
    if annotation is list or origin in (list, List):
        args = get_args(annotation)
        if not args:
            return {"type": "array", "items": {"type": "string"}}
        if is_model(args[0]):
            return {"type": "array", "items": pydantic_model_to_json_schema(args[0])}
        return {"type": "array", "items": json_type(args[0])}
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(annotation))}
    if annotation is dict or origin in (dict, Dict):
        if not get_args(annotation):
            return {"type": "object"}
        raise ValueError(
            f"Dictionary types {annotation} with nested type arguments are not supported (consider using a Pydantic model instead)"
        )
    if is_model(annotation):
        return pydantic_model_to_json_schema(annotation)
    if isinstance(annotation, str) or annotation not in TYPE_MAP:
        raise ValueError(f"Python type {annotation} has no corresponding JSON schema type - full map: {TYPE_MAP_TEXT}")
    return {"type": TYPE_MAP[annotation]}


def description_of(doc, raw):
    if doc.short and doc.long:
        text = f"{doc.short}\n\n{doc.long}"
    else:
        text = doc.short or doc.long or "No description available"
    examples = examples_section(raw)
    if examples and "Examples:" not in text:
        text = f"{text}\n\n{examples}"
    return text


def tool_schema(source, name=None):
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ToolSchemaError(f"Failed to parse source code: {error}")
    names = imports_map_of(tree)
    names.update(models_of(tree, names))
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not functions:
        raise ToolSchemaError("No functions found in source code")
    function = functions[-1]
    docstring = ast.get_docstring(function, clean=False)
    if not docstring:
        raise ToolSchemaError(f"Function {function.name} missing docstring")
    doc = Docstring(docstring)
    schema = {
        "name": name or function.name,
        "description": description_of(doc, docstring),
        "parameters": {"type": "object", "properties": {}, "required": []},
    }
    args = function.args.args
    first_default = len(args) - len(function.args.defaults)
    try:
        for index, arg in enumerate(args):
            if arg.arg in RESERVED:
                continue
            annotation = parse_annotation(arg.annotation, names)
            if annotation is inspect.Parameter.empty:
                raise TypeError(f"Parameter '{arg.arg}' in function '{function.name}' lacks a type annotation")
            description = doc.params.get(arg.arg)
            if not description:
                raise ValueError(f"Parameter '{arg.arg}' in function '{function.name}' lacks a description in the docstring")
            if is_model(annotation):
                prop = pydantic_model_to_json_schema(annotation)
            else:
                prop = json_type(annotation)
            prop["description"] = description
            schema["parameters"]["properties"][arg.arg] = prop
            has_default = index >= first_default and literal_default(function.args.defaults[index - first_default])[0]
            if not has_default and not is_optional(annotation):
                schema["parameters"]["required"].append(arg.arg)
            if get_origin(annotation) is list and get_args(annotation) and get_args(annotation)[0] is str:
                prop["items"] = {"type": "string"}
    except TypeError as error:
        raise ToolSchemaError(f"Type error in schema generation: {error}")
    except ValueError as error:
        raise ToolSchemaError(f"Value error in schema generation: {error}")
    except Exception as error:  # noqa: BLE001 - Letta wraps any other failure the same way
        raise ToolSchemaError(f"Unexpected error in schema generation: {error}")
    return schema


def signature(source):
    """The last function's name and docstring, for tools whose arguments come from args_json_schema."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ToolSchemaError(f"Failed to parse source code: {error}")
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not functions:
        raise ToolSchemaError("No functions found in source code")
    return {"name": functions[-1].name, "docstring": ast.get_docstring(functions[-1])}


def main():
    request = json.load(sys.stdin)
    try:
        if request.get("mode") == "signature":
            result = {"signature": signature(request["source"])}
        else:
            result = {"schema": tool_schema(request["source"], request.get("name"))}
    except ToolSchemaError as error:
        result = {"error": f"Schema generation failed: {error}"}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
