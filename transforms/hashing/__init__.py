"""Password hashes: conversion to passwap's forms, the target's verifier policy, tallies and reports."""
