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
