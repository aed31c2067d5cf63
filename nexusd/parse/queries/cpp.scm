; NEXUS query for C++ (and .h headers). Capture names are shared by every language: see extract.py's
; docstring. `void ns::Class::m() {}` is captured by its last name; CFamilyHooks.owner reads the scope, so
; its qualified name is `ns.Class.m` like a method written inside the class body. Prototypes and in-class
; method declarations are kind "declaration"; the resolver prefers the definition.

; A function's name, found from its function_declarator: one pattern per name shape (name, a::name, a::b::name,
; a::b::c::name), and CFamilyHooks.declarator_definition walks up to what it declares (a function_definition,
; declaration or field_declaration, through at most a pointer, a pointer to a pointer or a reference) and names
; its kind. Spelled out per (declarator x name) shape, as nested alternations with a shared capture drop matches
; in tree-sitter 0.26, these were 48 patterns that took 0.5-0.65 s to compile in every process that met a C++
; file or a .h header.
(function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name) @definition.declarator
(function_declarator declarator: (qualified_identifier name: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)) @definition.declarator
(function_declarator declarator: (qualified_identifier name: (qualified_identifier name: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name))) @definition.declarator
(function_declarator declarator: (qualified_identifier name: (qualified_identifier name: (qualified_identifier name: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)))) @definition.declarator

(class_specifier
  name: [(type_identifier) @name (qualified_identifier name: (type_identifier) @name)]
  (base_class_clause)? @bases
  body: (field_declaration_list)) @definition.class

(struct_specifier
  name: [(type_identifier) @name (qualified_identifier name: (type_identifier) @name)]
  (base_class_clause)? @bases
  body: (field_declaration_list)) @definition.struct

(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.namespace

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.struct

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.enum

(type_definition
  declarator: (type_identifier) @name) @definition.type

(alias_declaration
  name: (type_identifier) @name) @definition.type

(preproc_function_def
  name: (identifier) @name) @definition.macro

(field_declaration_list
  (field_declaration
    declarator: [(field_identifier) @name
                 (pointer_declarator declarator: (field_identifier) @name)
                 (reference_declarator (field_identifier) @name)
                 (array_declarator declarator: (field_identifier) @name)]) @definition.field)

; f(...), f<T>(...)
(call_expression
  function: (identifier) @call.name) @reference.call

(call_expression
  function: (template_function
    name: (identifier) @call.name)) @reference.call

; obj.m(...), ptr->m(...), this->m(...)
(call_expression
  function: (field_expression
    argument: (_) @call.receiver
    field: (field_identifier) @call.name)) @reference.call

; Class::m(...), ns::f(...), a::b::f<T>(...)
(call_expression
  function: (qualified_identifier
    scope: (_) @call.receiver
    name: [(identifier) @call.name
           (template_function name: (identifier) @call.name)
           (qualified_identifier name: [(identifier) (template_function)] @call.name)
           (qualified_identifier name: (qualified_identifier name: [(identifier) (template_function)] @call.name))])) @reference.call

; `Derived() : Base(args), member_(x)`: a base initializer calls the base's constructor (the resolver
; drops the member initializers, which name fields)
(field_initializer_list
  (field_initializer
    (field_identifier) @call.name) @reference.call)

; new X(...), new ns::X(...)
(new_expression
  type: [(type_identifier) @call.name (qualified_identifier name: (type_identifier) @call.name)
         (template_type name: (type_identifier) @call.name)]) @reference.new

(preproc_include) @import
