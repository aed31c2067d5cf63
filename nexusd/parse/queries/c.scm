; NEXUS query for C. Capture names are shared by every language: see extract.py's docstring.
; A prototype (`int f(int);`) is a symbol of kind "declaration"; the resolver links calls to the definition
; when the repository has one. Generated from the same shapes as cpp.scm (C has no qualified names).

(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)))) @definition.function

(declaration declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)) @definition.declaration
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name))) @definition.declaration
(declaration declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)))) @definition.declaration

; struct/union/enum definitions (with a body); `typedef struct {...} Name;` is a type named Name
(struct_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.struct

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.enum

(type_definition
  declarator: (type_identifier) @name) @definition.type

; function-like macros are called like functions
(preproc_function_def
  name: (identifier) @name) @definition.macro

; data members: their types let `s->store.save()` be followed
(field_declaration_list
  (field_declaration
    declarator: [(field_identifier) @name
                 (pointer_declarator declarator: (field_identifier) @name)
                 (array_declarator declarator: (field_identifier) @name)]) @definition.field)

; f(...)
(call_expression
  function: (identifier) @call.name) @reference.call

; obj.m(...), ptr->m(...), this->m(...)
(call_expression
  function: (field_expression
    argument: (_) @call.receiver
    field: (field_identifier) @call.name)) @reference.call

(preproc_include) @import
