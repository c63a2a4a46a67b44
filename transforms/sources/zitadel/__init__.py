"""ZITADEL export documents (dataOrgsv1) → a plan of import bodies."""
