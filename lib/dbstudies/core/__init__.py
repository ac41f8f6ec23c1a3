"""The ground every wing stands on: one base error (`errors`), where the repository's folders
are (`paths`), the one subprocess helper (`proc`), and what one comparison table measures,
declared once (`comparisons`), which every view of an answer iterates.
"""
