; NEXUS query for TSX (.tsx). The tsx grammar shares TypeScript's node names for everything captured, so the
; patterns are TypeScript's; JSX-specific patterns would go below the include.
; include: typescript.scm
