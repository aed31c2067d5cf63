; NEXUS query for Python. Capture names are shared by every language: see extract.py's docstring.
; A function_definition inside a class body is reported as @definition.function; extract.py turns it
; into a method because its enclosing definition is a class (queries cannot see ancestors cheaply).

(function_definition
  name: (identifier) @name) @definition.function

(class_definition
  name: (identifier) @name
  superclasses: (argument_list)? @bases) @definition.class

; Module-level `X = make(...)`: a symbol of kind variable; calls in the initialiser are credited to it.
; (This grammar puts a module-level assignment directly under `module`.)
(module
  (assignment
    left: (identifier) @name
    right: (call)) @definition.variable)

; foo(...)
(call
  function: (identifier) @call.name) @reference.call

; obj.m(...), self.m(...), a.b.c(...), super().m(...)
(call
  function: (attribute
    object: (_) @call.receiver
    attribute: (identifier) @call.name)) @reference.call

; A bare decorator is a call of that name: `@pass_obj`, `@grp.command` (with parentheses it is a call above).
(decorator
  (identifier) @call.name) @reference.call

(decorator
  (attribute
    object: (_) @call.receiver
    attribute: (identifier) @call.name)) @reference.call

(import_statement) @import
(import_from_statement) @import

; Type environment (TypeFact): bindings whose value or annotation may type a name; see lang_python.py.
; Function definitions are typed from their definition match (PythonHooks.typed_definitions).
(decorated_definition) @typing
(assignment) @typing
(return_statement) @typing
(as_pattern) @typing
(for_statement) @typing
(for_in_clause) @typing
(named_expression) @typing
