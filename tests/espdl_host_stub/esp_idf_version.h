// Host stand-in (tests only): see README.md.
#pragma once
