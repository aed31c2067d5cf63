; NEXUS query for JavaScript (.js .mjs .cjs .jsx). Capture names are shared: see extract.py's docstring.

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(class_declaration
  name: (identifier) @name
  (class_heritage)? @bases) @definition.class

(class_body
  (method_definition
    name: (_) @name) @definition.method)

; class fields holding functions are methods: `onClick = () => {...}`
(class_body
  (field_definition
    property: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)

; const f = () => {...}; const g = function () {...}
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; Object-literal members holding a function: `{fetch: async () => f()}`, `{clone() {...}}`, `{'on-click'() {}}`.
; They are callers and callees of their own (kind property_function), qualified by the enclosing definition.
(object
  (pair
    key: [(property_identifier) (string) (computed_property_name)] @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.property_function)

(object
  (method_definition
    name: [(property_identifier) (string) (computed_property_name)] @name) @definition.property_function)

; Top-level `const`/`let`/`var` initialised by a call, `new`, `await`, an object literal or a conditional (a
; function is a function, above): `export const X = factory(...)`, `const schema = z.string().nullable()`,
; `export const compose = hasExtension ? extension : function () {...}`. Kinds: constant for const, variable for
; let/var. Calls in the initialiser are credited to them.
(program
  (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.constant))

(program
  (export_statement
    (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.constant)))

(program
  (lexical_declaration
    kind: "let"
    (variable_declarator
      name: (identifier) @name
      value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.variable))

(program
  (export_statement
    (lexical_declaration
      kind: "let"
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.variable)))

(program
  (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.variable))

(program
  (export_statement
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (ternary_expression)]) @definition.variable)))

(call_expression
  function: (identifier) @call.name) @reference.call

(call_expression
  function: (member_expression
    object: (_) @call.receiver
    property: (_) @call.name)) @reference.call

; super(...) inside a constructor
(call_expression
  function: (super) @call.name) @reference.call

(new_expression
  constructor: (identifier) @call.name) @reference.new

(new_expression
  constructor: (member_expression
    object: (_) @call.receiver
    property: (_) @call.name)) @reference.new

; `const { a, b: c } = ns`: names taken out of a binding (an imported namespace gives module members)
(variable_declarator
  name: (object_pattern)
  value: (identifier)) @import

(import_statement) @import
(export_statement
  source: (_)) @import

; import('./x')
(call_expression
  function: (import)
  arguments: (arguments . (string) @import.source)) @import.dynamic

; export default X / export { a as b } / export default class Foo {} (the hook skips `export ... from`)
(export_statement) @export

; CommonJS: module.exports = {...} / module.exports = X / exports.x = y
(assignment_expression
  left: (member_expression
    object: (identifier) @_object
    (#match? @_object "^(module|exports)$"))) @export

; Type environment (TypeFact): bindings whose value or annotation may type a name; see lang_ecmascript.py.
; Declared functions and methods are typed from their definition match (EcmaHooks.typed_definitions).
(variable_declarator) @typing
(arrow_function) @typing
(function_expression) @typing
(return_statement) @typing
(assignment_expression) @typing
(for_in_statement) @typing
(catch_clause) @typing
(field_definition) @typing
