; NEXUS query for Java. Capture names are shared by every language: see extract.py's docstring.
; Type declarations capture themselves as @bases: the hook reads `superclass`, `interfaces` and
; `extends_interfaces` from the declaration. Members are matched only inside type bodies, so the methods
; of an anonymous class (`new Runnable() { ... }`) are not symbols: their calls belong to the enclosing
; method. The package declaration is decoded by the hook as an ImportFact of kind "package".

(class_declaration
  name: (identifier) @name) @definition.class @bases

(record_declaration
  name: (identifier) @name) @definition.class @bases

(interface_declaration
  name: (identifier) @name) @definition.interface @bases

(annotation_type_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.enum @bases

(class_declaration
  body: (class_body
    [(method_declaration name: (identifier) @name)
     (constructor_declaration name: (identifier) @name)
     (compact_constructor_declaration name: (identifier) @name)] @definition.method))

(record_declaration
  body: (class_body
    [(method_declaration name: (identifier) @name)
     (constructor_declaration name: (identifier) @name)
     (compact_constructor_declaration name: (identifier) @name)] @definition.method))

(interface_declaration
  body: (interface_body
    (method_declaration name: (identifier) @name) @definition.method))

(enum_declaration
  body: (enum_body
    (enum_body_declarations
      [(method_declaration name: (identifier) @name)
       (constructor_declaration name: (identifier) @name)] @definition.method)))

; foo(...)
(method_invocation
  !object
  name: (identifier) @call.name) @reference.call

; obj.m(...), this.m(...), super.m(...), Type.m(...), a.b.m(...)
(method_invocation
  object: (_) @call.receiver
  name: (identifier) @call.name) @reference.call

; super(...) / this(...): the hook names the constructor it calls
(explicit_constructor_invocation
  constructor: [(super) (this)] @call.name @call.receiver) @reference.call

; new Foo(...), new Foo<T>(...), new a.b.Foo(...) (the hook splits a scoped type into receiver and name)
(object_creation_expression
  type: (type_identifier) @call.name) @reference.new

(object_creation_expression
  type: (scoped_type_identifier) @call.name @call.receiver) @reference.new

(object_creation_expression
  type: (generic_type
    . (type_identifier) @call.name)) @reference.new

(object_creation_expression
  type: (generic_type
    . (scoped_type_identifier) @call.name @call.receiver)) @reference.new

(package_declaration) @import
(import_declaration) @import
