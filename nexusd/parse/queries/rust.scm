; NEXUS query for Rust. Capture names are shared by every language: see extract.py's docstring.
; An `impl` block is a symbol of kind "impl" named after its type, so the functions inside it are
; methods qualified `Type.method`; `impl Trait for Type` records the trait as its base.

(function_item
  name: (identifier) @name) @definition.function

(function_signature_item
  name: (identifier) @name) @definition.function

(struct_item
  name: (type_identifier) @name) @definition.struct

(union_item
  name: (type_identifier) @name) @definition.struct

(enum_item
  name: (type_identifier) @name) @definition.enum

(trait_item
  name: (type_identifier) @name
  bounds: (trait_bounds)? @bases) @definition.trait

(type_item
  name: (type_identifier) @name) @definition.type

(mod_item
  name: (identifier) @name
  body: (declaration_list)) @definition.namespace

(impl_item
  trait: (_)? @bases
  type: [
    (type_identifier) @name
    (generic_type type: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
    (scoped_type_identifier name: (type_identifier) @name)
    (reference_type type: (type_identifier) @name)
  ]) @definition.impl

(macro_definition
  name: (identifier) @name) @definition.macro

; named struct fields: their types let `self.store.save()` be followed through the struct
(field_declaration_list
  (field_declaration
    name: (field_identifier) @name) @definition.field)

; f(...)
(call_expression
  function: (identifier) @call.name) @reference.call

; a::b::f(...), Type::new(...), Self::new(...)
(call_expression
  function: (scoped_identifier
    path: (_) @call.receiver
    name: (identifier) @call.name)) @reference.call

; x.m(...), self.m(...), self.a.m(...)
(call_expression
  function: (field_expression
    value: (_) @call.receiver
    field: (field_identifier) @call.name)) @reference.call

; f::<T>(...), x.m::<T>(...)
(call_expression
  function: (generic_function
    function: (identifier) @call.name)) @reference.call

(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: (_) @call.receiver
      name: (identifier) @call.name))) @reference.call

(call_expression
  function: (generic_function
    function: (field_expression
      value: (_) @call.receiver
      field: (field_identifier) @call.name))) @reference.call

; Calls inside macro arguments (`println!("{}", f(x))`, `format!("{}", self.id())`): macro bodies are
; token trees, not expressions, so calls there are recognised by shape: a name right before `( ... )`.
(token_tree
  ["(" "," "[" "{"] . (identifier) @call.name . (token_tree . "(")) @reference.call

(token_tree
  [(identifier) (self)] @call.receiver . "." . (identifier) @call.name . (token_tree . "(")) @reference.call

(use_declaration) @import

(mod_item
  name: (identifier)
  !body) @import
