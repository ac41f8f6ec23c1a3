"""A tidy table's declaration: its name, schema version and columns (pandas dtypes). Kept
apart from the run store so that studies can declare their tables without importing pandas
(`dbstudies list` imports every study module)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from ..core.errors import SchemaError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Table:
    """A tidy table's declared columns (pandas dtypes) and schema version."""
    name: str
    version: int
    columns: Mapping[str, str]
    doc: str = ""

    def conform(self, df: pd.DataFrame) -> pd.DataFrame:
        """Exactly the declared columns, in order and with their dtypes, or a SchemaError."""
        missing = [c for c in self.columns if c not in df.columns]
        extra = [c for c in df.columns if c not in self.columns]
        if missing or extra:
            raise SchemaError(f"table {self.name} v{self.version}: missing columns {missing}, "
                             f"undeclared columns {extra}")
        return df[list(self.columns)].astype(dict(self.columns)).reset_index(drop=True)
