// Counts calls to the global operator new, on every thread, for the tests
// that prove a launch path allocates nothing. Link tests/counting_new.cpp into
// the test executable (it replaces the global operator new and delete).
#pragma once

long GlobalNewCalls();
