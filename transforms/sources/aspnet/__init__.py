"""The ASP.NET Identity source: the AspNetUsers table (CSV) and its side tables → ZITADEL import bodies (docs/aspnet.md)."""
