; NEXUS query for C#. Capture names are shared by every language: see extract.py's docstring.
; Structs and records are reported as classes (they have members, constructors and interfaces, and are
; built with `new`); their signature keeps the keyword. Namespaces are not symbols: the hook reports each
; `namespace X.Y { }` / `namespace X.Y;` as an ImportFact of kind "package" naming the types it declares,
; so qualified names stay type-relative (`Outer.Inner.Method`) as in Java.

(class_declaration name: (identifier) @name) @definition.class @bases
(struct_declaration name: (identifier) @name) @definition.class @bases
(record_declaration name: (identifier) @name) @definition.class @bases
(interface_declaration name: (identifier) @name) @definition.interface @bases
(enum_declaration name: (identifier) @name) @definition.enum

(declaration_list
  [(method_declaration name: (identifier) @name)
   (constructor_declaration name: (identifier) @name)] @definition.method)

(declaration_list
  (property_declaration name: (identifier) @name) @definition.property)

(local_function_statement name: (identifier) @name) @definition.function

; Foo(...), Foo<T>(...)
(invocation_expression
  function: (identifier) @call.name) @reference.call

(invocation_expression
  function: (generic_name . (identifier) @call.name)) @reference.call

; obj.M(...), this.M(...), base.M(...), Type.M(...), a.b.M<T>(...)
(invocation_expression
  function: (member_access_expression
    expression: _ @call.receiver
    name: (identifier) @call.name)) @reference.call

(invocation_expression
  function: (member_access_expression
    expression: _ @call.receiver
    name: (generic_name . (identifier) @call.name))) @reference.call

; obj?.M(...)
(invocation_expression
  function: (conditional_access_expression
    condition: (_) @call.receiver
    (member_binding_expression name: (identifier) @call.name))) @reference.call

; : base(...) / : this(...) — the hook names the constructor it calls
(constructor_initializer
  ["base" "this"] @call.name @call.receiver) @reference.call

; new Foo(...), new Foo<T>(...), new A.B.Foo(...)
(object_creation_expression
  type: (identifier) @call.name) @reference.new

(object_creation_expression
  type: (generic_name . (identifier) @call.name)) @reference.new

(object_creation_expression
  type: (qualified_name) @call.name @call.receiver) @reference.new

(using_directive) @import
(namespace_declaration) @import
(file_scoped_namespace_declaration) @import
