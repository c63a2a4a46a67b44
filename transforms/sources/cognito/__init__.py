"""The Cognito source: ``aws cognito-idp list-users`` answers and the get-csv-header CSV → ZITADEL import bodies (docs/cognito.md)."""
