; NEXUS query for TypeScript (.ts .mts .cts). Capture names are shared: see extract.py's docstring.
; tsx.scm includes this file: the tsx grammar has the same node names for everything captured here.

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

; overload signatures: `function f(a: string): void;` (counted by `occurrence`)
(function_signature
  name: (identifier) @name) @definition.function

(class_declaration
  name: (_) @name
  (class_heritage)? @bases) @definition.class

(abstract_class_declaration
  name: (_) @name
  (class_heritage)? @bases) @definition.class

(class_body
  (method_definition
    name: (_) @name) @definition.method)

; method overload signatures: `m(a: string): void;` before the implementation (kind overload, see extract.py)
(class_body
  (method_signature
    name: (_) @name) @definition.method)

(class_body
  (abstract_method_signature
    name: (_) @name) @definition.method)

(class_body
  (public_field_definition
    name: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

(interface_declaration
  name: (_) @name
  (extends_type_clause)? @bases) @definition.interface

; interface members that are methods: `greet(who: string): string;`, `wave?(): void;` (kind method, no body).
; A call through an interface-typed receiver lands on them, as the type checker binds it; impact on a class's
; method follows `implements` back to them (nexusd/query/graphq.py, dispatch).
(interface_body
  (method_signature
    name: (_) @name) @definition.method)

(type_alias_declaration
  name: (_) @name) @definition.type

(enum_declaration
  name: (_) @name) @definition.enum

(internal_module
  name: (_) @name) @definition.namespace

; Object-literal members holding a function: `{fetch: async () => f()}`, `{clone() {...}}`, `{'on-click'() {}}`,
; `{[Symbol.asyncIterator]() {...}}` (named by its computed key's text, as a class member is).
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
      value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.constant))

(program
  (export_statement
    (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.constant)))

(program
  (lexical_declaration
    kind: "let"
    (variable_declarator
      name: (identifier) @name
      value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.variable))

(program
  (export_statement
    (lexical_declaration
      kind: "let"
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.variable)))

(program
  (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.variable))

(program
  (export_statement
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [(call_expression) (new_expression) (await_expression) (object) (as_expression) (satisfies_expression) (ternary_expression)]) @definition.variable)))

(call_expression
  function: (identifier) @call.name) @reference.call

(call_expression
  function: (member_expression
    object: (_) @call.receiver
    property: (_) @call.name)) @reference.call

(call_expression
  function: (super) @call.name) @reference.call

(new_expression
  constructor: (identifier) @call.name) @reference.new

(new_expression
  constructor: (member_expression
    object: (_) @call.receiver
    property: (_) @call.name)) @reference.new

; A bare decorator is a call of that name: `@Injectable`, `@core.Component` (`@X()` is a call above).
(decorator
  (identifier) @call.name) @reference.call

(decorator
  (member_expression
    object: (_) @call.receiver
    property: (_) @call.name)) @reference.call

; `const { a, b: c } = ns`: names taken out of a binding (an imported namespace gives module members)
(variable_declarator
  name: (object_pattern)
  value: (identifier)) @import

(import_statement) @import
(export_statement
  source: (_)) @import

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
(public_field_definition) @typing
