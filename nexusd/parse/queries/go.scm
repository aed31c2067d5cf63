; NEXUS query for Go. Capture names are shared by every language: see extract.py's docstring.
; A method declared with a receiver (`func (s *Store) Save()`) is written outside its type: GoHooks.owner
; reads the receiver type, so its qualified name is `Store.Save` wherever the type itself is defined.

(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  name: (field_identifier) @name) @definition.method

; struct types; embedded fields (no name) are the "bases": their methods are promoted
(type_spec
  name: (type_identifier) @name
  type: (struct_type (field_declaration_list) @bases)) @definition.struct

(type_spec
  name: (type_identifier) @name
  type: (interface_type) @bases) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (generic_type) (pointer_type) (slice_type) (map_type)
         (array_type) (function_type) (channel_type)]) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

; named struct fields: their types let `s.db.Get()` be followed through the struct
(field_declaration_list
  (field_declaration
    name: (field_identifier) @name) @definition.field)

; interface methods
(interface_type
  (method_elem
    name: (field_identifier) @name) @definition.method)

; f(...)
(call_expression
  function: (identifier) @call.name) @reference.call

; pkg.F(...), x.M(...), a.b.M(...)
(call_expression
  function: (selector_expression
    operand: (_) @call.receiver
    field: (field_identifier) @call.name)) @reference.call

; generic instantiation: F[int](...), which the grammar may also read as a conversion to a generic type
(call_expression
  function: (index_expression
    operand: (identifier) @call.name)) @reference.call

(type_conversion_expression
  type: (generic_type
    type: (type_identifier) @call.name)) @reference.call

(import_declaration) @import
